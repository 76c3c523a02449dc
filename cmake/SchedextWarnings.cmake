# schedext_set_warnings(target): the project's warning set, as errors.
function(schedext_set_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Werror)
endfunction()

# schedext_enable_sanitizers(target): ASan + UBSan when SCHEDEXT_SANITIZE is on.
function(schedext_enable_sanitizers target)
  if(SCHEDEXT_SANITIZE)
    target_compile_options(${target} PRIVATE
      -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

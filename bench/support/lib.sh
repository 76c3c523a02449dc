# Shell helpers shared by the bench/ scripts (bench/prod, bench/ab, bench/rss).
# Source it: . "$(dirname "${BASH_SOURCE[0]}")/support/lib.sh"
# Every function prints its errors prefixed with $bench_name (set it first).

bench_name="${bench_name:-bench}"

# bench_ensure_packages PACKAGE...: installs the Debian packages that are
# missing, with apt-get (through sudo when not root), as scripts/dev does.
bench_ensure_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  echo "$bench_name: installing ${missing[*]}" >&2
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
}

# bench_free_port: a loopback TCP port nothing listens on now.
bench_free_port() {
  local port _
  for _ in $(seq 50); do
    port=$((20000 + RANDOM % 30000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  echo "$bench_name: no free port" >&2
  return 1
}

# bench_wait_healthz PORT PID [SECONDS]: until GET /healthz on PORT answers
# (at most SECONDS, 60 by default); fails early when PID has exited.
bench_wait_healthz() {
  local _
  for _ in $(seq $((${3:-60} * 10))); do
    curl -fsS -o /dev/null "http://127.0.0.1:$1/healthz" 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || { echo "$bench_name: server $2 exited" >&2; return 1; }
    sleep 0.1
  done
  echo "$bench_name: nothing answered on port $1" >&2
  return 1
}

# bench_machine: one line naming the machine, e.g.
# "2 CPUs (AMD EPYC 9R14), 23 GiB".
bench_machine() {
  local cpu mem
  cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
  mem=$(awk '/^MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo)
  echo "$(nproc) CPUs ($cpu), $mem GiB"
}

# bench_replace_section DOC NAME FILE: replaces the lines between
# "<!-- NAME:begin" and "<!-- NAME:end -->" in DOC (markers included) with
# FILE, which carries its own markers; appends FILE when DOC has none.
bench_replace_section() {
  local doc="$1" name="$2" file="$3"
  if grep -q "<!-- $name:begin" "$doc" 2>/dev/null; then
    awk -v f="$file" -v b="<!-- $name:begin" -v e="<!-- $name:end -->" '
      index($0, b) == 1 { while ((getline l < f) > 0) print l; skip = 1; next }
      index($0, e) == 1 { skip = 0; next }
      !skip { print }' "$doc" >"$doc.tmp"
    mv "$doc.tmp" "$doc"
  else
    cat "$file" >>"$doc"
  fi
}

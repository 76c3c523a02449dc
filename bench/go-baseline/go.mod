module schedext.example/go-baseline

go 1.19

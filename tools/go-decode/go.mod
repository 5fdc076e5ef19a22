module clusterd-ts/go-decode

go 1.25

module unicodetables

go 1.24

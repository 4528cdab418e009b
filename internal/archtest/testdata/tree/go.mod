module example.com/tree

go 1.26

require example.org/ext v0.0.0

replace example.org/ext => ./ext

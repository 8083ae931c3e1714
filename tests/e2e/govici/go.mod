module flowsec.test/govici

go 1.24

require github.com/strongswan/govici v0.8.0

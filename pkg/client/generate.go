package client

// client.gen.go is generated from api/openapi.yaml by oapi-codegen, the
// version pinned by the tool line of go.mod, with the settings of
// oapi-codegen.yaml. Never edit it: change the contract and run
//
//	go generate ./pkg/client
//
// TestGeneratedClientIsCurrent fails while the checked-in file differs from
// what the generator makes of the contract.
//
// internal/emptyquery then has each request builder start its query from an
// empty url.Values rather than from url.URL.Query, which drops what it
// cannot parse (see that command for why the two are the same requests).

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../../api/openapi.yaml
//go:generate go run ./internal/emptyquery client.gen.go

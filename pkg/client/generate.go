package client

// client.gen.go is generated from api/openapi.yaml by oapi-codegen, the
// version pinned by the tool line of go.mod, with the settings of
// oapi-codegen.yaml. Never edit it: change the contract and run
//
//	go generate ./pkg/client
//
// TestGeneratedClientIsCurrent fails while the checked-in file differs from
// what the generator makes of the contract.

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../../api/openapi.yaml

package api

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"strings"
	"sync"
)

// The reference page at /docs is the Scalar API Reference (MIT, vendored in
// docs/scalar with its licence and provenance), run in the browser on
// /openapi.json: it cannot disagree with the contract, and the binary serves
// every byte of it.

//go:embed docs/index.html
var docsPage string

//go:embed docs/scalar/standalone.js.gz
var docsScriptGzip []byte

// scriptVersion in docs/index.html becomes DocsScriptVersion(): the page
// asks for its script (GET /docs/reference.js) by the hash of its content,
// so a cache may keep that URL for good.
const scriptVersion = "SCRIPT_VERSION"

var docsScriptVersion = sync.OnceValue(func() string {
	sum := sha256.Sum256(docsScriptGzip)
	return hex.EncodeToString(sum[:8])
})

// DocsScriptVersion is the hash of the page's script that its URL carries.
func DocsScriptVersion() string { return docsScriptVersion() }

// DocsScriptGzip is the page's script, gzip-compressed.
func DocsScriptGzip() []byte { return docsScriptGzip }

var docsHTML = sync.OnceValue(func() []byte {
	if strings.Count(docsPage, scriptVersion) != 1 {
		panic("api/docs/index.html must name its script once, with v=" + scriptVersion)
	}
	return []byte(strings.Replace(docsPage, scriptVersion, DocsScriptVersion(), 1))
})

// DocsHTML is the reference page.
func DocsHTML() []byte { return docsHTML() }

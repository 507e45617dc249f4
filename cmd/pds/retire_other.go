//go:build !unix

package main

// stopConnecting does nothing where the accept queue cannot be shrunk.
func stopConnecting(uintptr) {}

//go:build unix

package main

import "syscall"

// stopConnecting shrinks the accept queue of the listening socket fd to
// one connection: the kernel answers no new connection attempt while one
// is queued (the client retries a second later, and finds the port
// closed), so that few are left queued, to be reset, when the socket
// closes.
func stopConnecting(fd uintptr) { _ = syscall.Listen(int(fd), 0) }

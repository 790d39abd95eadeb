package server

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientIP is the address limits and logs attribute a request to. The
// X-Forwarded-For header is believed only when the TCP peer is a trusted
// proxy; it is then read right to left, skipping trusted hops, so a client
// cannot choose its own address by prepending to the header.
func clientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := remoteAddr(r.RemoteAddr)
	if !isTrusted(peer, trusted) {
		return peer
	}
	hops := r.Header.Values("X-Forwarded-For")
	var chain []string
	for _, h := range hops {
		chain = append(chain, strings.Split(h, ",")...)
	}
	client := peer
	for i := len(chain) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(chain[i]))
		if err != nil {
			break // garbage: stop at the last hop we could read
		}
		client = a.Unmap()
		if !isTrusted(client, trusted) {
			break
		}
	}
	return client
}

func remoteAddr(s string) netip.Addr {
	host, _, err := net.SplitHostPort(s)
	if err != nil {
		host = s
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// A reverse proxy from Go's standard library only (net/http/httputil), as a
// stand-in for a compiled Go gateway such as Bifrost, whose modules this host
// cannot fetch. It forwards every request to the upstream unchanged through a
// keep-alive pool and relays the answer, flushing each write at once (as a
// streaming gateway must). No auth, parsing, translation or metrics: what it
// adds is the floor of a Go proxy process on this host.
// Usage: go-proxy <upstream origin> (prints its own origin on stdout)
package main

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

func main() {
	target, err := url.Parse(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	proxy.Transport = &http.Transport{
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     60 * time.Second,
		DisableCompression:  true,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("http://%s\n", ln.Addr().String())
	log.Fatal(http.Serve(ln, proxy))
}

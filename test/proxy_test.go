package test

import (
	"net"
	"net/url"
	"sync"
	"testing"
)

// stallProxy forwards TCP connections to a target until it is stalled;
// then it goes on accepting connections but forwards no byte in either
// direction, on new connections and on those already open, until it is
// resumed: a database that hangs (a network partition, a frozen server)
// rather than one that refuses.
type stallProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	gate    chan struct{} // closed while forwarding; a new one while stalled
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
	stopped bool
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := make(chan struct{})
	close(open)
	p := &stallProxy{ln: ln, target: target, gate: open, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// proxiedURL returns the PostgreSQL URL raw with its host replaced by the
// proxy's address, and the proxy forwarding to raw's host.
func proxiedURL(t *testing.T, raw string) (*stallProxy, string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p := newStallProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	return p, u.String()
}

// Addr is the address the proxy listens on.
func (p *stallProxy) Addr() string { return p.ln.Addr().String() }

// stall stops forwarding.
func (p *stallProxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
		p.gate = make(chan struct{})
	default: // already stalled
	}
}

// resume forwards again, what was held first.
func (p *stallProxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
}

func (p *stallProxy) wait() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gate
}

func (p *stallProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			_ = c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.forward(c)
		}()
	}
}

func (p *stallProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

// forward connects to the target (at once: the hang is in the bytes, not
// in the connection) and copies both ways through the gate.
func (p *stallProxy) forward(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	if !p.track(server) {
		_ = client.Close()
		_ = server.Close()
		return
	}
	var both sync.WaitGroup
	both.Add(2)
	for _, d := range [][2]net.Conn{{client, server}, {server, client}} {
		go func() {
			defer both.Done()
			p.copy(d[1], d[0])
			// One side ended: end both, as a connection through the
			// network would.
			_ = d[0].Close()
			_ = d[1].Close()
		}()
	}
	both.Wait()
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// copy copies src to dst, holding every chunk read while the proxy is
// stalled, so that nothing passes until it is resumed.
func (p *stallProxy) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			<-p.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF, or a side closed
		}
	}
}

// close stops the proxy and every connection through it.
func (p *stallProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	p.stopped = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.resume()
	p.wg.Wait()
}

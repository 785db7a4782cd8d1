//go:build !stb_jsontext

package jsonscan

// peek returns the first byte of the next value, '{', '[', '"' and so on,
// or 0 at the end of the input, without reading it: walk's switch.
func (d *Decoder) peek() byte { return d.next() }

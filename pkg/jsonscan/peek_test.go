package jsonscan

// peek returns the kind of the next value, '{', '[', '"' and so on, or 0
// at the end of the input or an error, without reading it: walk's switch.
func (d *Decoder) peek() byte {
	dec, took := d.begin()
	if took {
		defer d.end()
	}
	return byte(dec.PeekKind())
}

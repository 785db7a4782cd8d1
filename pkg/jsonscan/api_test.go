package jsonscan

// The package's API, which both implementations (the hand-written lexer
// and, with -tags stb_jsontext, jsontext) must offer: a function or
// method missing or of another type in either fails to compile here, in
// that build.
var (
	_                                              = MaxDepth
	_ func([]byte) *Decoder                        = NewDecoder
	_ func(*Decoder, []byte)                       = (*Decoder).Reset
	_ func(*Decoder) error                         = (*Decoder).Done
	_ func(*Decoder, func([]byte) error) error     = (*Decoder).Object
	_ func(*Decoder, func() error) error           = (*Decoder).Array
	_ func(*Decoder) (string, bool, error)         = (*Decoder).String
	_ func(*Decoder) ([]string, error)             = (*Decoder).Strings
	_ func(*Decoder) ([]byte, error)               = (*Decoder).Raw
	_ func(*Decoder) error                         = (*Decoder).Skip
	_ func(*Decoder, func() error) ([]byte, error) = (*Decoder).Span
	_ func([]byte) bool                            = IsNull
	_ func([]byte) bool                            = Valid
	_ error                                        = (*SyntaxError)(nil)
	_ error                                        = (*TypeError)(nil)
)

package transport

// CheckSyntax is checkSyntax, for BenchmarkSyntaxCheck.
var CheckSyntax = checkSyntax

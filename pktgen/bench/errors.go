package bench

// FieldError is a problem with one field of a Request or Selection. Field
// names it in the words of its doc comment ("rate", "cpus", "variants"),
// so that a caller can name it as its user gave it: cmd turns it into the
// flag of the same name. The library itself names no flag.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

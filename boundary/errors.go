package boundary

import "errors"

// Errors callers branch on (match with errors.Is).
var (
	// ErrTooLarge: the area of interest holds more pixels than
	// Options.MaxPixels allows.
	ErrTooLarge = errors.New("area of interest too large")
	// ErrNoImagery: no scene in the date range overlaps the area with
	// enough clear pixels.
	ErrNoImagery = errors.New("no clear imagery over the area of interest")
	// ErrEmptyAOI: the area of interest is empty or holds no pixel of
	// any scene.
	ErrEmptyAOI = errors.New("empty area of interest")
)

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBufferedLog(t *testing.T) {
	var out syncBuffer
	b := newBufferedLog(&out, time.Hour)
	b.Write([]byte("level=INFO msg=request\n"))
	assert.Empty(t, out.String(), "info lines wait for the batch")
	b.Write([]byte("level=ERROR msg=\"request failed\"\n"))
	assert.Equal(t, "level=INFO msg=request\nlevel=ERROR msg=\"request failed\"\n", out.String(), "an error is written at once, in order")
	b.Write([]byte("level=INFO msg=last\n"))
	b.Write([]byte(strings.Repeat("x", maxBuffered)))
	assert.Equal(t, "level=INFO msg=request\nlevel=ERROR msg=\"request failed\"\nlevel=INFO msg=last\n"+strings.Repeat("x", maxBuffered),
		out.String(), "a full buffer is written")
	b.Write([]byte("level=INFO msg=closing\n"))
	b.Close()
	assert.True(t, strings.HasSuffix(out.String(), "level=INFO msg=closing\n"), "Close writes what is left")
}

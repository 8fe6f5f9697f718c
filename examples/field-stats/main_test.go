package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunOnBundledSample(t *testing.T) {
	out := t.TempDir()
	var buf bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-out", out}, &buf))

	// UES-03 on 2019-06-20: the data README's reference NDVI statistics.
	assert.Contains(t, buf.String(), "UES-03      352   0.8498   0.8881   0.0821")
	lines := strings.Count(buf.String(), "\n")
	assert.Equal(t, 2+16, lines, "header lines plus one per field")
	_, err := os.Stat(filepath.Join(out, "UES-03_ndvi.png"))
	assert.NoError(t, err)
}

package server

import (
	"encoding/json"
	"mime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The parameters' plain-ASCII shortcuts give what encoding/json gives.
func TestParamShortcutsMatchJSON(t *testing.T) {
	for _, s := range []string{
		"", "UES-03", "2019-06-20", "a b", "field 1/2", "~!@#$%^*()_+{}|:?[];',./`",
		`quote"inside`, `back\slash`, "tab\there", "new\nline", "<b>&amp;", "\x7f", "é", "Zürich", "\u2028", "\xff\xfe", "日本",
	} {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(quote(s)), "quote(%q)", s)
		got, ok, err := params{"p": quote(s)}.str("p")
		require.NoError(t, err)
		assert.True(t, ok)
		var back string
		require.NoError(t, json.Unmarshal(want, &back))
		assert.Equal(t, back, got, "str of %q", s)
	}
	// Raw JSON values as bodies send them, escapes included.
	for _, raw := range []string{`"plain"`, `"esc\"aped"`, `"\u00e9t\u00e9"`, `"a\/b"`, `""`, `"a\u0000b"`} {
		var want string
		require.NoError(t, json.Unmarshal([]byte(raw), &want))
		got, ok, err := params{"p": json.RawMessage(raw)}.str("p")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, want, got, "str of %s", raw)
	}
	// Invalid JSON strings stay refused.
	for _, raw := range []string{"\"ctrl\x01\"", `"unterminated\"`} {
		_, _, err := params{"p": json.RawMessage(raw)}.str("p")
		assert.Error(t, err, "str of %q", raw)
	}
}

// A file name that is a MIME token is sent as mime.FormatMediaType writes it.
func TestContentDispositionShortcut(t *testing.T) {
	for _, name := range []string{"UES-03_ndvi_20190620.json", "a.png", "x_y-z.zip", "f~1!#$%&'*+^`|.tif"} {
		require.True(t, mimeToken(name), name)
		assert.Equal(t, mime.FormatMediaType("attachment", map[string]string{"filename": name}), contentDisposition(name))
	}
	for _, name := range []string{"", "a b.json", "a;b.json", `q"uote.json`, "é.json", "a/b.json", "a=b.json", "(x).json"} {
		assert.False(t, mimeToken(name), name)
	}
	assert.Equal(t, `attachment; filename="a b.json"`, contentDisposition("a b.json"))
}

package webhook_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/internal/testenv"
	"github.com/cropkit/cropkit/webhook"
)

// The generic recipe of the README, run by Python's standard library,
// accepts our headers.
func TestPythonVerifiesSignature(t *testing.T) {
	python := testenv.RequireTool(t, "python3")
	secret, err := webhook.NewSecret()
	require.NoError(t, err)
	body := `{"group":"g","field":"f","data":[{"index":"ndvi","date":"2019-06-20 10:56:29 GMT"}]}`
	h, err := webhook.Headers(secret, "msg_0123abcd", time.Now(), []byte(body))
	require.NoError(t, err)
	script := `
import base64, hashlib, hmac, sys, time
secret, wid, ts, sig = sys.argv[1:5]
body = sys.stdin.buffer.read()
key = base64.b64decode(secret.removeprefix("whsec_"))
msg = f"{wid}.{ts}.".encode() + body
expected = base64.b64encode(hmac.new(key, msg, hashlib.sha256).digest()).decode()
ok = any(hmac.compare_digest(s.split(",", 1)[1], expected) for s in sig.split() if s.startswith("v1,"))
print("ok" if ok and abs(time.time() - int(ts)) <= 300 else "bad")
`
	run := func(body string) string {
		cmd := exec.Command(python, "-c", script, secret, h.Get(webhook.HeaderID), h.Get(webhook.HeaderTimestamp), h.Get(webhook.HeaderSignature))
		cmd.Stdin = strings.NewReader(body)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out))
	}
	assert.Equal(t, "ok", run(body))
	assert.Equal(t, "bad", run(body+" "))
}

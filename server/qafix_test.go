package server_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cropkit/cropkit/server"
	"github.com/cropkit/cropkit/server/servertest"
)

// QA: /tokens/revoke read any all= other than "true" as false and revoked
// the caller's token. A value that is not a boolean is a 400 and revokes
// nothing; the booleans' spellings all mean what they say.
func TestRevokeAllBoolean(t *testing.T) {
	for _, tc := range []struct {
		all         string
		status      int
		revoked     float64
		callerAlive bool
		otherAlive  bool
	}{
		{"yes", 400, 0, true, true},
		{"maybe", 400, 0, true, true},
		{"2", 400, 0, true, true},
		{"TRUE", 200, 2, false, false},
		{"1", 200, 2, false, false},
		{"true", 200, 2, false, false},
		{"false", 200, 1, false, true},
		{"0", 200, 1, false, true},
	} {
		t.Run(tc.all, func(t *testing.T) {
			env := servertest.New(t, server.Config{})
			tok := env.AddUser(t, "alice", nil)
			other, err := env.Archive.CreateToken(context.Background(), "alice")
			require.NoError(t, err)
			r := do(t, env.Handler, "POST", "/tokens/revoke?all="+tc.all, tok, nil)
			require.Equal(t, tc.status, r.Status, "%s", r.Body)
			if tc.status == 400 {
				assert.Equal(t, "bad_request", r.ErrorCode(t))
				assert.Contains(t, string(r.Body), "parameter all must be true or false")
			} else {
				assert.Equal(t, tc.revoked, r.JSON(t)["revoked"])
			}
			alive := func(tok string) bool { return do(t, env.Handler, "GET", "/fields/list", tok, nil).Status == 200 }
			assert.Equal(t, tc.callerAlive, alive(tok), "caller's token")
			assert.Equal(t, tc.otherAlive, alive(other), "other token")
		})
	}
}

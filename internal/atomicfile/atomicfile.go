// Package atomicfile writes files that readers see whole or not at all:
// the data goes to a temporary file in the same folder, which is then
// renamed over the target.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strconv"
)

// maxAttempts bounds the temporary names tried when one exists already.
const maxAttempts = 100

// Write writes data to path through a temporary file beside it and a
// rename, so that readers never see a partial file; the file gets mode
// 0666 less the umask, as os.WriteFile gives. It is not synced: a power
// loss may lose recent writes (callers that cannot recompute them sync).
// On any error the temporary file is removed and path is unchanged.
func Write(path string, data []byte) error {
	dir, base := filepath.Split(path)
	var err error
	for range maxAttempts {
		tmp := filepath.Join(dir, "."+base+"."+strconv.FormatUint(rand.Uint64(), 36)+".tmp")
		err = write(tmp, path, data)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

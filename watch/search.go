package watch

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/stac"
)

// Search records: the outcome of a catalogue search is recorded beside the
// items, under an id that no catalogue item has, so that a catalogue that
// keeps refusing a search shows in /scenes/list (state "failed", the
// answer's status and body as the error, the fields affected).
const (
	// SearchRecordPrefix starts the ids of search records: "search:poll"
	// and "search:backfill:<field ids>".
	SearchRecordPrefix = "search:"
	// SearchOK is the state of a search record whose search succeeded
	// after it had failed.
	SearchOK = "searched"
)

// maxSplitSearches bounds the extra searches one poll or backfill makes to
// isolate the fields a catalogue refuses.
const maxSplitSearches = 16

// maxRecordedError bounds the error text kept in a search record.
const maxRecordedError = 2 << 10

// groupFailure is a group of fields whose search failed.
type groupFailure struct {
	fields []archive.Field
	err    error
}

// searchFields searches the catalogue for fields (footprint of their boxes)
// and calls visit with each item and the fields of the search that found
// it. When the catalogue refuses the search itself (refused), the fields
// are split in halves and searched again, down to single fields, so that
// one field a catalogue cannot search does not block the others. It returns
// the groups that still failed.
func (w *Watcher) searchFields(ctx context.Context, fields []archive.Field, params stac.SearchParams,
	visit func(stac.Item, []archive.Field) error) ([]groupFailure, error) {
	budget := maxSplitSearches
	var failed []groupFailure
	var run func(group []archive.Field) error
	run = func(group []archive.Field) error {
		p := params
		footprint(group, &p)
		var searchErr error
		for it, err := range w.client.Search(ctx, w.cfg.Catalog, p) {
			if err != nil {
				searchErr = err
				break
			}
			if err := visit(it, group); err != nil {
				return err // the archive's, not the catalogue's
			}
		}
		if searchErr == nil {
			return nil
		}
		if ctx.Err() != nil {
			return searchErr
		}
		if len(group) > 1 && refused(searchErr) && budget >= 2 {
			budget -= 2
			half := len(group) / 2
			w.log.WarnContext(ctx, "catalogue refused a search; searching the fields in halves", "fields", len(group), "err", searchErr)
			if err := run(group[:half]); err != nil {
				return err
			}
			return run(group[half:])
		}
		failed = append(failed, groupFailure{fields: group, err: searchErr})
		return nil
	}
	sorted := slices.Clone(fields)
	slices.SortFunc(sorted, func(a, b archive.Field) int {
		return cmp.Or(cmp.Compare(a.Bound.Min[0], b.Bound.Min[0]), cmp.Compare(a.ID, b.ID))
	})
	return failed, run(sorted)
}

// refused: the catalogue answered the search with an error that is about
// the request (a 4xx other than 408/429, or a 500 such as a
// TopologyException), not about its own state (down, overloaded: 502, 503,
// 504, 429, transport errors), so a smaller search may succeed.
func refused(err error) bool {
	var he *stac.HTTPError
	if !errors.As(err, &he) {
		return false
	}
	switch {
	case he.Status == http.StatusRequestTimeout || he.Status == http.StatusTooManyRequests:
		return false
	case he.Status >= 400 && he.Status < 500, he.Status == http.StatusInternalServerError:
		return true
	}
	return false
}

// searchRecordID names the search record of kind ("poll", "backfill") for
// fields: the poll has one; a backfill one per field set.
func searchRecordID(kind string, fields []archive.Field) string {
	if kind == "poll" && fields == nil {
		return SearchRecordPrefix + "poll"
	}
	ids := make([]string, len(fields))
	for i, f := range fields {
		ids[i] = strconv.FormatInt(f.ID, 10)
	}
	slices.Sort(ids)
	joined := strings.Join(ids, ",")
	if len(ids) > 8 {
		h := sha256.Sum256([]byte(joined))
		joined = strings.Join(ids[:8], ",") + fmt.Sprintf(",…(%d fields, %s)", len(ids), hex.EncodeToString(h[:4]))
	}
	return SearchRecordPrefix + kind + ":" + joined
}

// recordSearch stores the outcome of a search under its record id, logs a
// failure (the catalogue's status and the start of its answer) and counts
// it. A success is recorded only over an earlier failure, which it clears.
func (w *Watcher) recordSearch(ctx context.Context, kind string, fields []archive.Field, id string, err error) {
	w.metrics.search(kind, err)
	st := w.core.Store()
	rec := archive.SceneItem{Collection: w.cfg.Collection, ID: id, Datetime: time.Now().UTC(), Source: w.cfg.Catalog,
		State: SearchOK, Fields: map[int64]int64{}}
	for _, f := range fields {
		rec.Fields[f.ID] = f.Version
	}
	if err != nil {
		rec.State, rec.Error = archive.ItemFailed, err.Error()
		if len(rec.Error) > maxRecordedError {
			rec.Error = rec.Error[:maxRecordedError] + "…"
		}
		args := []any{"kind", kind, "fields", len(fields), "record", id, "err", err}
		var he *stac.HTTPError
		if errors.As(err, &he) {
			args = append(args, "status", he.Status, "body", he.Body)
		}
		w.log.ErrorContext(ctx, "catalogue search failed", args...)
	} else if prev, gerr := st.SceneItem(ctx, w.cfg.Collection, id); gerr != nil || prev.State != archive.ItemFailed {
		return // no earlier failure to clear
	}
	// Recorded even when the job's context has ended (a deadline): the
	// failure must show.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if rerr := w.core.RecordItem(rctx, rec); rerr != nil {
		w.log.WarnContext(ctx, "record search outcome", "record", id, "err", rerr)
	}
}

// recordTimeout bounds the database write that records an outcome after
// the job's own context has ended.
const recordTimeout = 10 * time.Second

package watch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/paulmach/orb"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/imagery/geotiff"
	"github.com/cropkit/cropkit/stac"
)

// Job kinds.
const (
	KindPoll     = "cropkit_catalogue_poll"
	KindBackfill = "cropkit_field_backfill"
	KindIngest   = "cropkit_item_ingest"
)

// PollArgs is a catalogue poll: the items that appeared since the last one,
// for every backfilled field they cover.
type PollArgs struct {
	Collection string `json:"collection" river:"unique"`
}

// Kind implements river.JobArgs.
func (PollArgs) Kind() string { return KindPoll }

// InsertOpts: one poll at a time (a periodic poll finding one queued or
// running is dropped); a failed poll is not retried, the next one is.
func (PollArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning, rivertype.JobStateScheduled,
	}}}
}

// BackfillArgs is the backfill of fields at their outline versions (the
// fields found new by one check, so that an item covering several of them
// is read once).
type BackfillArgs struct {
	Collection string     `json:"collection" river:"unique"`
	Fields     []FieldRef `json:"fields" river:"unique"`
}

// Kind implements river.JobArgs.
func (BackfillArgs) Kind() string { return KindBackfill }

// InsertOpts: unique per field set while queued, running or retried.
func (BackfillArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: activeStates}}
}

// FieldRef is a field at one outline version.
type FieldRef struct {
	ID      int64 `json:"id"`
	Version int64 `json:"version"`
}

// IngestArgs is the ingestion of one catalogue item for a set of fields.
// The item's JSON travels with the job so that the catalogue is not asked
// for it again.
type IngestArgs struct {
	Collection string          `json:"collection" river:"unique"`
	ItemID     string          `json:"item_id" river:"unique"`
	Updated    string          `json:"updated" river:"unique"`
	Fields     []FieldRef      `json:"fields" river:"unique"`
	Base       string          `json:"base"`
	Item       json.RawMessage `json:"item"`
}

// Kind implements river.JobArgs.
func (IngestArgs) Kind() string { return KindIngest }

// InsertOpts: unique per (item version, field set) while queued, running,
// retried or completed, so two polls never ingest the same item twice; the
// items table keeps the record once river prunes completed jobs.
func (IngestArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: append(slices.Clone(activeStates), rivertype.JobStateCompleted)}}
}

var activeStates = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
	rivertype.JobStateRetryable, rivertype.JobStateScheduled,
}

// updated is the item's "updated" as recorded ("" when absent).
func updated(it stac.Item) string {
	if it.Updated.IsZero() {
		return ""
	}
	return it.Updated.UTC().Format(time.RFC3339Nano)
}

// maxCloud is the search's scene cloud cover limit: none for a radar
// collection (radar sees through clouds; its items carry no eo:cloud_cover).
func (w *Watcher) maxCloud(collection string) *float64 {
	if RadarCollection(collection) {
		return nil
	}
	v := w.cfg.MaxCloud
	return &v
}

// RadarCollection reports whether a collection id names Sentinel-1 radar
// ("sentinel-1-rtc", "sentinel-1-grd", "s1-…"), to which no cloud cover applies.
func RadarCollection(collection string) bool {
	c := strings.ToLower(collection)
	return strings.Contains(c, "sentinel-1") || strings.Contains(c, "sentinel1") || strings.HasPrefix(c, "s1-") || strings.HasPrefix(c, "s1_")
}

// enqueueIngest queues item for fields (sorted, so the field set is one key).
func (w *Watcher) enqueueIngest(ctx context.Context, collection string, it stac.Item, fields []FieldRef) error {
	slices.SortFunc(fields, func(a, b FieldRef) int { return cmp.Compare(a.ID, b.ID) })
	_, err := w.queue.Insert(ctx, IngestArgs{Collection: collection, ItemID: it.ID, Updated: updated(it),
		Fields: fields, Base: it.Base, Item: it.Raw}, nil)
	if err != nil {
		return fmt.Errorf("enqueue ingestion of %s: %w", it.ID, err)
	}
	return nil
}

// pollWorker runs catalogue polls.
type pollWorker struct {
	river.WorkerDefaults[PollArgs]
	w *Watcher
}

func (p *pollWorker) Work(ctx context.Context, job *river.Job[PollArgs]) error {
	err := p.w.poll(ctx, cmp.Or(job.Args.Collection, p.w.cfg.Collection))
	p.w.metrics.poll(err)
	if err != nil {
		p.w.log.WarnContext(ctx, "catalogue poll failed (the next poll tries again)", "err", err)
	}
	return err
}

// poll searches the items of the backfilled fields' boxes that may be new
// and queues the ones not ingested yet (or updated since) for the fields
// they cover. Items are published late, so "acquired since the last poll"
// would miss some: when the catalogue filters on "updated" (CQL2), the poll
// asks for everything since the backfill start (re)published since the
// last poll (with an hour's overlap); otherwise (and at the first poll of a
// process) for everything acquired since the newest ingested acquisition
// minus Config.Margin, never before the backfill start.
func (w *Watcher) poll(ctx context.Context, collection string) error {
	st := w.core.Store()
	all, err := st.Fields(ctx, 0)
	if err != nil {
		return err
	}
	watched, err := st.WatchedFields(ctx)
	if err != nil {
		return err
	}
	// Fields not backfilled yet are left to their backfill, which covers
	// the same items.
	fields := slices.DeleteFunc(all, func(f archive.Field) bool { v, ok := watched[f.ID]; return !ok || v != f.Version })
	if len(fields) == 0 {
		return nil
	}
	began := time.Now()
	start := w.cfg.Backfill.Start(began)
	params := stac.SearchParams{Collections: []string{collection}, MaxCloud: w.maxCloud(collection), Limit: 100}
	w.mu.Lock()
	last := w.lastPoll[collection]
	w.mu.Unlock()
	if landing, err := w.client.GetLanding(ctx, w.cfg.Catalog); err == nil && landing.SupportsFilter() && !last.IsZero() {
		// The catalogue filters on publication: everything since the
		// backfill start (re)published since the last poll, however late.
		params.UpdatedSince = last.Add(-time.Hour)
	} else {
		newest, err := st.NewestItem(ctx, collection)
		if err != nil {
			return err
		}
		if m := newest.Add(-w.cfg.Margin); !newest.IsZero() && m.After(start) {
			start = m
		}
	}
	params.Start = start
	params.OnBadItem = w.onBadItem(ctx)
	found, queued := 0, 0
	failed, err := w.searchFields(ctx, fields, params, func(it stac.Item, group []archive.Field) error {
		found++
		known, err := st.SceneItem(ctx, collection, it.ID)
		switch {
		case errors.Is(err, archive.ErrNotFound):
		case err != nil:
			return err
		case known.Updated == updated(it):
			return nil // ingested (or failed for good) in this version: never read again
		}
		var refs []FieldRef
		b := itemBound(it)
		for _, f := range group {
			if b.Intersects(f.Bound) {
				refs = append(refs, FieldRef{ID: f.ID, Version: f.Version})
			}
		}
		if len(refs) == 0 {
			return nil
		}
		if err := w.enqueueIngest(ctx, collection, it, refs); err != nil {
			return err
		}
		queued++
		return nil
	})
	if err != nil {
		return fmt.Errorf("poll %s: %w", w.cfg.Catalog, err)
	}
	if err := w.searchOutcome(ctx, "poll", fields, failed); err != nil {
		// The window does not move: the failed fields' items are searched
		// again next time.
		return fmt.Errorf("poll %s: %w", w.cfg.Catalog, err)
	}
	w.log.InfoContext(ctx, "catalogue polled", "collection", collection, "since", start.Format(time.RFC3339), "updated_since", params.UpdatedSince,
		"items", found, "queued", queued)
	w.mu.Lock()
	w.lastPoll[collection] = began
	w.mu.Unlock()
	return nil
}

// searchOutcome records the outcome of the searches of a poll or backfill
// over fields: a record per failed group (and the poll's own), and an
// error naming the failures when there are any.
func (w *Watcher) searchOutcome(ctx context.Context, kind string, fields []archive.Field, failed []groupFailure) error {
	var errs []error
	n := 0
	for _, g := range failed {
		n += len(g.fields)
		if kind == "poll" && len(g.fields) == len(fields) {
			continue // the poll's own record says it
		}
		w.recordSearch(ctx, kind, g.fields, searchRecordID(kind, g.fields), g.err)
		errs = append(errs, g.err)
	}
	var err error
	if len(failed) > 0 {
		err = fmt.Errorf("search failed for %d of %d fields: %w", n, len(fields), failed[0].err)
	}
	switch {
	case kind == "poll":
		w.recordSearch(ctx, kind, fields, searchRecordID("poll", nil), err)
	case err == nil:
		w.recordSearch(ctx, kind, fields, searchRecordID(kind, fields), nil)
	}
	return err
}

// onBadItem logs and counts an item a search skipped as malformed.
func (w *Watcher) onBadItem(ctx context.Context) func(error) {
	return func(err error) {
		w.metrics.badItem("search")
		w.log.WarnContext(ctx, "catalogue item skipped", "err", err)
	}
}

// maxFootprintParts bounds the parts of a search footprint: beyond it the
// search asks for the fields' overall box (a request must stay small).
const maxFootprintParts = 50

// footprint sets the search area: a geometry that is valid whatever the
// fields' layout, since a catalogue that validates geometries (PostGIS/GEOS)
// refuses a MultiPolygon whose members overlap or share an edge. The fields'
// boxes are merged while any two overlap or touch (each merged group becomes
// its bounding box); the disjoint boxes left are the parts: one Polygon, a
// MultiPolygon of up to maxFootprintParts, else the overall box.
func footprint(fields []archive.Field, p *stac.SearchParams) {
	boxes := make([]orb.Bound, len(fields))
	for i, f := range fields {
		boxes[i] = f.Bound
	}
	parts := mergeBoxes(boxes)
	switch {
	case len(parts) == 1:
		p.Intersects = parts[0].ToPolygon()
	case len(parts) <= maxFootprintParts:
		mp := make(orb.MultiPolygon, len(parts))
		for i, b := range parts {
			mp[i] = b.ToPolygon()
		}
		p.Intersects = mp
	default:
		b := parts[0]
		for _, q := range parts[1:] {
			b = b.Union(q)
		}
		p.Bbox = &b
	}
}

// mergeBoxes replaces every group of boxes that overlap or touch (directly
// or through others) by the group's bounding box, until no two boxes left
// overlap or touch. The result is sorted (west to east, then south to north).
func mergeBoxes(boxes []orb.Bound) []orb.Bound {
	boxes = slices.Clone(boxes)
	for {
		parent := make([]int, len(boxes))
		for i := range parent {
			parent[i] = i
		}
		var find func(int) int
		find = func(i int) int {
			for parent[i] != i {
				parent[i] = parent[parent[i]]
				i = parent[i]
			}
			return i
		}
		// Sorted by west edge, a box can only meet the boxes after it
		// whose west edge is not east of its own east edge.
		slices.SortFunc(boxes, func(a, b orb.Bound) int {
			return cmp.Or(cmp.Compare(a.Min[0], b.Min[0]), cmp.Compare(a.Min[1], b.Min[1]))
		})
		for i := range boxes {
			for j := i + 1; j < len(boxes) && boxes[j].Min[0] <= boxes[i].Max[0]; j++ {
				if boxes[i].Intersects(boxes[j]) { // closed boxes: touching counts
					parent[find(j)] = find(i)
				}
			}
		}
		merged := map[int]orb.Bound{}
		var roots []int
		for i, b := range boxes {
			r := find(i)
			if m, ok := merged[r]; ok {
				merged[r] = m.Union(b)
			} else {
				merged[r] = b
				roots = append(roots, r)
			}
		}
		out := make([]orb.Bound, len(roots))
		for k, r := range roots {
			out[k] = merged[r]
		}
		if len(out) == len(boxes) {
			slices.SortFunc(out, func(a, b orb.Bound) int {
				return cmp.Or(cmp.Compare(a.Min[0], b.Min[0]), cmp.Compare(a.Min[1], b.Min[1]))
			})
			return out
		}
		boxes = out
	}
}

// itemBound is an item's lon/lat box (its bbox, else its geometry's).
func itemBound(it stac.Item) orb.Bound {
	if len(it.Bbox) >= 4 {
		n := len(it.Bbox) / 2 // 2D or 3D bbox
		return orb.Bound{Min: orb.Point{it.Bbox[0], it.Bbox[1]}, Max: orb.Point{it.Bbox[n], it.Bbox[n+1]}}
	}
	if it.Geometry != nil {
		return it.Geometry.Bound()
	}
	// Without a footprint every field may be covered; ingestion tests the
	// exact overlap.
	return orb.Bound{Min: orb.Point{-180, -90}, Max: orb.Point{180, 90}}
}

// backfillWorker runs per-field backfills.
type backfillWorker struct {
	river.WorkerDefaults[BackfillArgs]
	w *Watcher
}

func (b *backfillWorker) Work(ctx context.Context, job *river.Job[BackfillArgs]) error {
	return b.w.backfill(ctx, job.Args)
}

// backfill queues the items since the backfill start that intersect the
// fields and were not ingested for their outlines, each for the fields it
// covers, then marks the fields watched (the polls take over).
func (w *Watcher) backfill(ctx context.Context, args BackfillArgs) error {
	st := w.core.Store()
	watched, err := st.WatchedFields(ctx)
	if err != nil {
		return err
	}
	var fields []archive.Field
	for _, ref := range args.Fields {
		if v, ok := watched[ref.ID]; ok && v == ref.Version {
			continue // searched by an earlier attempt of this job
		}
		f, err := st.FieldByID(ctx, ref.ID)
		if errors.Is(err, archive.ErrNotFound) {
			continue // deleted since
		}
		if err != nil {
			return err
		}
		if f.Version == ref.Version { // else re-outlined since: that version has its own backfill
			fields = append(fields, f)
		}
	}
	if len(fields) == 0 {
		return nil
	}
	collection := cmp.Or(args.Collection, w.cfg.Collection)
	params := stac.SearchParams{Collections: []string{collection}, Start: w.cfg.Backfill.Start(time.Now()),
		MaxCloud: w.maxCloud(collection), Limit: 100, OnBadItem: w.onBadItem(ctx)}
	queued := 0
	failed, err := w.searchFields(ctx, fields, params, func(it stac.Item, group []archive.Field) error {
		known, err := st.SceneItem(ctx, collection, it.ID)
		switch {
		case errors.Is(err, archive.ErrNotFound):
		case err != nil:
			return err
		case known.Updated == updated(it) && known.State == archive.ItemFailed:
			return nil // its bands failed for good; tried again when updated
		}
		var refs []FieldRef
		b := itemBound(it)
		for _, f := range group {
			if !b.Intersects(f.Bound) {
				continue
			}
			if v, ok := known.Fields[f.ID]; ok && v == f.Version && known.Updated == updated(it) {
				continue // ingested for this outline already
			}
			refs = append(refs, FieldRef{ID: f.ID, Version: f.Version})
		}
		if len(refs) == 0 {
			return nil
		}
		if err := w.enqueueIngest(ctx, collection, it, refs); err != nil {
			return err
		}
		queued++
		return nil
	})
	if err != nil {
		return fmt.Errorf("backfill %d fields: %w", len(fields), err)
	}
	searchErr := w.searchOutcome(ctx, "backfill", fields, failed)
	bad := map[int64]bool{}
	for _, g := range failed {
		for _, f := range g.fields {
			bad[f.ID] = true
		}
	}
	w.log.InfoContext(ctx, "backfill queued", "fields", len(fields), "items", queued, "failed_fields", len(bad))
	// The fields searched are watched from now on (the polls take over);
	// the failed ones wait for this job's retry.
	for _, f := range fields {
		if bad[f.ID] {
			continue
		}
		if err := st.MarkWatched(ctx, f.ID, f.Version); err != nil {
			return err
		}
	}
	if searchErr != nil {
		return fmt.Errorf("backfill %d fields: %w", len(fields), searchErr)
	}
	return nil
}

// ingestWorker ingests one item for a set of fields.
type ingestWorker struct {
	river.WorkerDefaults[IngestArgs]
	w *Watcher
}

func (i *ingestWorker) Work(ctx context.Context, job *river.Job[IngestArgs]) error {
	// A job the rescuer handed out again while this process still runs it
	// (a stuck read) must not run twice at once: it waits its turn.
	key := job.Args.Collection + "\x00" + job.Args.ItemID + "\x00" + job.Args.Updated
	if !i.w.begin(key) {
		i.w.log.WarnContext(ctx, "item ingestion already running here; snoozed", "item", job.Args.ItemID)
		return river.JobSnooze(i.w.cfg.JobTimeout)
	}
	defer i.w.end(key)
	return i.w.ingest(ctx, job.Args, job.Attempt >= job.MaxAttempts)
}

// ingest reads the item's bands (Range requests over the fields' windows
// only) and records the outcome; a failed attempt is recorded and retried.
func (w *Watcher) ingest(ctx context.Context, args IngestArgs, last bool) error {
	it, err := stac.ParseItem(args.Item, args.Base)
	if err != nil {
		// A stored job whose item cannot be read will not improve.
		return river.JobCancel(fmt.Errorf("ingest %s: %w", args.ItemID, err))
	}
	st := w.core.Store()
	rec := archive.SceneItem{Collection: args.Collection, ID: it.ID, Datetime: it.Datetime, Updated: args.Updated,
		Source: it.Source(), Fields: map[int64]int64{}}
	if limit := time.Now().Add(stac.MaxFutureSkew); it.Datetime.After(limit) {
		// Queued before the search refused such items: never ingested, so
		// never the newest acquisition that moves the poll window.
		err := fmt.Errorf("ingest %s: datetime %s is more than %v in the future", it.ID, it.Datetime.Format(time.RFC3339), stac.MaxFutureSkew)
		w.metrics.badItem("ingest")
		rec.State, rec.Error, rec.Fields = archive.ItemFailed, err.Error(), nil
		return river.JobCancel(errors.Join(err, w.record(ctx, rec)))
	}
	ids := make([]int64, 0, len(args.Fields))
	for _, ref := range args.Fields {
		f, err := st.FieldByID(ctx, ref.ID)
		if errors.Is(err, archive.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		rec.Fields[f.ID] = f.Version
		if other, err := w.imagedBy(ctx, f, it); err != nil {
			return err
		} else if other != "" {
			// Two items of one date over a field (overlapping tiles, a
			// reprocessed copy under another id): the first usable one
			// stands, so the field is notified once for that date.
			w.log.InfoContext(ctx, "field already imaged that date", "item", it.ID, "field", f.ID, "by", other)
			continue
		}
		ids = append(ids, f.ID)
	}
	if len(ids) == 0 && len(rec.Fields) > 0 {
		rec.State = archive.ItemIngested
		return w.record(ctx, rec)
	}
	if len(ids) == 0 {
		return nil // every field deleted since
	}
	res, err := w.ingestItem(ctx, it, ids)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("job time limit %v reached: %w", w.cfg.JobTimeout, err)
	}
	// An item cropkit refuses to read (another sensor, JPEG 2000 only, local
	// files) fails at once with the reason: retrying cannot change it.
	refused := errors.Is(err, imagery.ErrUnsupportedSensor) || errors.Is(err, imagery.ErrUnreadableAsset) ||
		errors.Is(err, imagery.ErrLocalAsset)
	switch {
	case err == nil:
		rec.State = archive.ItemIngested
	case last || refused:
		rec.State, rec.Error, rec.Fields = archive.ItemFailed, err.Error(), nil
	default:
		rec.State, rec.Error, rec.Fields = archive.ItemRetrying, err.Error(), nil
	}
	w.metrics.item(rec.State, res.Usable+res.Unusable)
	if rerr := w.record(ctx, rec); rerr != nil {
		return errors.Join(err, rerr)
	}
	if err != nil {
		w.log.WarnContext(ctx, "item ingestion failed", "item", it.ID, "state", rec.State, "err", err)
		if refused {
			return river.JobCancel(err)
		}
		return err
	}
	w.log.InfoContext(ctx, "item ingested", "item", it.ID, "date", res.Date, "fields", res.Fields,
		"usable", res.Usable, "notified", res.Notified)
	return nil
}

// record stores an item's outcome even when the job's context has ended
// (its time limit is usually why it failed), within recordTimeout.
func (w *Watcher) record(ctx context.Context, rec archive.SceneItem) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	return w.core.RecordItem(ctx, rec)
}

// begin marks the ingestion key running in this process; false when it
// already is.
func (w *Watcher) begin(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running[key] {
		return false
	}
	w.running[key] = true
	return true
}

func (w *Watcher) end(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.running, key)
}

// imagedBy is the other item whose usable products field f already has
// for item's acquisition date ("" when none).
func (w *Watcher) imagedBy(ctx context.Context, f archive.Field, it stac.Item) (string, error) {
	date := it.Datetime.UTC().Format(time.DateOnly)
	ps, err := w.core.Products(ctx, f, archive.ProductQuery{From: date, To: date, UsableOnly: true})
	if err != nil {
		return "", err
	}
	for _, p := range ps {
		if p.SceneID != it.ID {
			return p.SceneID, nil
		}
	}
	return "", nil
}

func (w *Watcher) ingestItem(ctx context.Context, it stac.Item, ids []int64) (archive.IngestResult, error) {
	// The archive's field pixel cap and memory budget apply to catalogue
	// items too (an item may point at a crafted file). Band reads end with
	// the job (its time limit), whatever context the scene keeps.
	opts := w.core.ReadOptions()
	opts.HTTPClient = jobBound(ctx, w.client.HTTP())
	for attempt := 1; ; attempt++ {
		res, err := w.ingestOnce(ctx, it, ids, opts)
		if err == nil || !errors.Is(err, geotiff.ErrFileChanged) || attempt >= maxRestarts {
			return res, err
		}
		// A band file changed while it was read (republished): read the
		// item again from the start rather than keep a mix of versions.
		w.log.WarnContext(ctx, "band file changed during the ingestion; restarting the item", "item", it.ID, "err", err)
	}
}

// maxRestarts bounds the reads of one item in one attempt when its band
// files change under it.
const maxRestarts = 2

func (w *Watcher) ingestOnce(ctx context.Context, it stac.Item, ids []int64, opts imagery.SceneOptions) (archive.IngestResult, error) {
	scene, err := w.client.OpenScene(ctx, it, opts)
	if err != nil {
		return archive.IngestResult{}, err
	}
	defer scene.Close()
	// Recorded as a source, so boundary detection can read the item again.
	return w.core.IngestScene(ctx, scene, archive.IngestOptions{Fields: ids, Source: it.Source()})
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/internal/netguard"
	"github.com/cropkit/cropkit/stac"
)

// signURLUsage documents --sign-url on every command that reads catalogue items.
const signURLUsage = "SAS token service `URL` (GET URL/token/{collection}) whose tokens sign every asset request of remote items " +
	"(a Planetary Computer mirror or proxy); without it only assets on *.blob.core.windows.net are signed, with " + stac.PlanetaryComputerSASURL

// allowHostUsage documents --ingest-allow-host on the commands that read
// remote items named on the command line.
const allowHostUsage = "a further host:port the remote items' assets may be on when it is a loopback, private or link-local address " +
	"(a band file server beside a private catalogue); the item URL's own origin and --sign-url's are allowed without it; repeatable"

// remoteFlags are the flags of the commands that read remote items.
type remoteFlags struct {
	// signURL is --sign-url: the SAS token service signing remote items' assets.
	signURL string
	// allowHosts are --ingest-allow-host.
	allowHosts []string
}

// addRemoteFlags adds --sign-url and --ingest-allow-host to fs.
func addRemoteFlags(fs *flag.FlagSet) *remoteFlags {
	r := &remoteFlags{}
	fs.StringVar(&r.signURL, "sign-url", "", signURLUsage)
	fs.Func("ingest-allow-host", allowHostUsage, func(v string) error {
		r.allowHosts = append(r.allowHosts, strings.Split(v, ",")...)
		return nil
	})
	return r
}

// sceneFetchTimeout bounds one request of a remote item or its bands.
const sceneFetchTimeout = 30 * time.Second

// configureSigning makes c sign asset requests with the token service at
// signURL: every asset host is signed, since the operator named the service
// for the catalogue they read. The service's origin may be on a private
// address (the operator named it); nothing else the token client reaches
// may. Empty signURL keeps the default (Planetary Computer's blob storage,
// its public token service).
func configureSigning(c *stac.Client, signURL string) error {
	if signURL == "" {
		return nil
	}
	tokens, err := netguard.New("token service").Allow(signURL)
	if err == nil {
		err = c.UseTokenService(signURL, tokens.Client(sceneFetchTimeout))
	}
	if err != nil {
		return fmt.Errorf("--sign-url: %w", err)
	}
	return nil
}

// isHTTPURL: s is an http(s) URL (a remote STAC item), not a path.
func isHTTPURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

// openSceneArg opens a --scene argument: a scene folder or a local item
// file as imagery.OpenScene does, or the URL of a remote STAC item with the
// catalogue's rules: its hrefs resolve against that URL, none may name a
// local file, the asset of each band is chosen deterministically, and
// Planetary Computer assets (or all, with --sign-url) are signed. The user
// named the item URL and --sign-url, so their origins (host and port) may
// be loopback or private; assets on any other origin may be only when
// --ingest-allow-host names it.
func openSceneArg(ctx context.Context, src string, opts imagery.SceneOptions, remote *remoteFlags) (*imagery.Scene, error) {
	if !isHTTPURL(src) {
		return imagery.OpenScene(ctx, src, opts)
	}
	guard, err := stac.NewGuard().Allow(src, remote.signURL)
	if err == nil {
		guard, err = guard.AllowHosts(remote.allowHosts...)
	}
	if err != nil {
		return nil, fmt.Errorf("scene %s: %w", src, err)
	}
	c := stac.NewGuardedClient(guard, sceneFetchTimeout)
	if err := configureSigning(c, remote.signURL); err != nil {
		return nil, err
	}
	it, err := c.GetItem(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("scene %s: %w", src, err)
	}
	s, err := c.OpenScene(ctx, it, opts)
	if err != nil {
		return nil, fmt.Errorf("scene %s: %w", src, err)
	}
	return s, nil
}

// fieldFeature is one feature of a fields file, or why it cannot be used.
type fieldFeature struct {
	index int
	name  string
	feat  geo.Feature
	err   error
}

// readFieldFeatures reads a GeoJSON FeatureCollection feature by feature,
// so one unreadable geometry does not hide the others: each feature comes
// with its own error. Only a file that is not a FeatureCollection (or
// Feature) at all is an error.
func readFieldFeatures(path string) ([]fieldFeature, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var fc struct {
		Type     string            `json:"type"`
		Features []json.RawMessage `json:"features"`
	}
	if err := json.Unmarshal(data, &fc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	raws := fc.Features
	switch fc.Type {
	case "FeatureCollection":
	case "Feature":
		raws = []json.RawMessage{data}
	default:
		return nil, fmt.Errorf("%s: type %q is not a FeatureCollection", path, fc.Type)
	}
	out := make([]fieldFeature, 0, len(raws))
	for i, raw := range raws {
		ff := fieldFeature{index: i}
		var props struct {
			Properties map[string]any `json:"properties"`
		}
		_ = json.Unmarshal(raw, &props)
		if n, ok := props.Properties["field_name"].(string); ok && n != "" {
			ff.name = n
		} else if n, ok := props.Properties["name"].(string); ok {
			ff.name = n
		}
		feats, err := geo.ReadFeatures(raw)
		switch {
		case err != nil:
			ff.err = err
		case len(feats) != 1:
			ff.err = fmt.Errorf("not one feature")
		default:
			ff.feat = feats[0]
		}
		out = append(out, ff)
	}
	return out, nil
}

// label names a feature in messages: its name, else its position.
func (f fieldFeature) label() string {
	if f.name != "" {
		return fmt.Sprintf("%q", f.name)
	}
	return fmt.Sprintf("feature %d", f.index)
}

// geometry is the feature's polygon if it is a valid field outline (the
// server's rules), else an error naming the feature.
func (f fieldFeature) geometry(path string) (orb.MultiPolygon, error) {
	err := f.err
	if err == nil {
		err = archive.ValidateOutline(f.feat.Geometry, archive.Limits{})
	}
	if err != nil {
		return nil, fmt.Errorf("%s: field %s: %w", path, f.label(), err)
	}
	return f.feat.Geometry, nil
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/archive"
	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
	"github.com/cropkit/cropkit/stac"
	"github.com/cropkit/cropkit/webhook"
)

// signURLUsage documents --sign-url on every command that reads catalogue items.
const signURLUsage = "SAS token service `URL` (GET URL/token/{collection}) whose tokens sign every asset request of remote items " +
	"(a Planetary Computer mirror or proxy); without it only assets on *.blob.core.windows.net are signed, with " + stac.PlanetaryComputerSASURL

// signURLFlag adds --sign-url to fs.
func signURLFlag(fs *flag.FlagSet) *string {
	return fs.String("sign-url", "", signURLUsage)
}

// sceneFetchTimeout bounds one request of a remote item or its bands.
const sceneFetchTimeout = 30 * time.Second

// configureSigning makes c sign asset requests with the token service at
// signURL: every asset host is signed, since the operator named the service
// for the catalogue they read. The service is reached even on a private
// address (the operator named it). Empty signURL keeps the default
// (Planetary Computer's blob storage, its public token service).
func configureSigning(c *stac.Client, signURL string) error {
	if signURL == "" {
		return nil
	}
	if err := c.UseTokenService(signURL, webhook.NewClient(true, sceneFetchTimeout)); err != nil {
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
// Planetary Computer assets (or all, with --sign-url) are signed. The item's
// host was named by the user, so it may be loopback or private; its assets
// may be too only when the item's host is.
func openSceneArg(ctx context.Context, src string, opts imagery.SceneOptions, signURL string) (*imagery.Scene, error) {
	if !isHTTPURL(src) {
		return imagery.OpenScene(ctx, src, opts)
	}
	c := stac.NewClient(namesPrivateHost(ctx, src), sceneFetchTimeout)
	if err := configureSigning(c, signURL); err != nil {
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

// namesPrivateHost reports whether the URL's host is, or resolves to, a
// loopback, private, link-local or metadata address (localhost included).
func namesPrivateHost(ctx context.Context, raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		return webhook.CheckAddr(a) != nil
	}
	if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if webhook.CheckAddr(a) != nil {
			return true
		}
	}
	return false
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

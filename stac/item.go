package stac

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/cropkit/cropkit/geo"
	"github.com/cropkit/cropkit/imagery"
)

// Link is a STAC link. Next links of a POST search carry Method "POST", the
// Body to send and Merge (merge Body into the previous request's body).
type Link struct {
	Rel     string            `json:"rel"`
	Href    string            `json:"href"`
	Type    string            `json:"type,omitempty"`
	Method  string            `json:"method,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
	Merge   bool              `json:"merge,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// Asset is one file of an item.
type Asset struct {
	Href  string   `json:"href"`
	Type  string   `json:"type,omitempty"`
	Roles []string `json:"roles,omitempty"`
}

// Item is a STAC item as a search returned it. Raw keeps its JSON, from which
// imagery reads the bands, scaling and projection.
type Item struct {
	ID         string
	Collection string
	// Datetime is the acquisition time (properties.datetime, else
	// start_datetime), fractions of a second kept, in UTC.
	Datetime time.Time
	// Created and Updated are the publication times when the item has them (UTC).
	Created, Updated time.Time
	// CloudCover is eo:cloud_cover in percent, nil when absent.
	CloudCover *float64
	Bbox       []float64
	// Geometry is the footprint (EPSG:4326), nil when the item has none or it
	// is not a (multi)polygon.
	Geometry   orb.MultiPolygon
	Assets     map[string]Asset
	Properties map[string]json.RawMessage
	Links      []Link
	// Raw is the item's JSON as served.
	Raw json.RawMessage
	// Base is the URL the item was fetched from: the search page that listed
	// it or the item's own URL. Relative asset hrefs resolve against it; the
	// item's self link never does (a catalogue could name a file:// or
	// s3:// self link and so reach this machine's files).
	Base string
	// Self is the item's rel "self" link when it is an http(s) URL on the
	// origin the item was fetched from, else "".
	Self string
}

// Source is where the item can be read again: its self link (Self) when it
// has a usable one, else Base.
func (it Item) Source() string {
	if it.Self != "" {
		return it.Self
	}
	return it.Base
}

// rawItem is the wire form of an item.
type rawItem struct {
	Type       string                     `json:"type"`
	ID         string                     `json:"id"`
	Collection string                     `json:"collection"`
	Bbox       []float64                  `json:"bbox"`
	Geometry   json.RawMessage            `json:"geometry"`
	Properties map[string]json.RawMessage `json:"properties"`
	Assets     map[string]Asset           `json:"assets"`
	Links      []Link                     `json:"links"`
}

// ParseItem decodes one STAC item; pageURL is where it was read (the base of
// relative links when the item has no self link).
func ParseItem(raw []byte, pageURL string) (Item, error) {
	var r rawItem
	if err := json.Unmarshal(raw, &r); err != nil {
		return Item{}, fmt.Errorf("stac: parse item: %w", err)
	}
	if r.Type != "" && r.Type != "Feature" {
		return Item{}, fmt.Errorf("stac: parse item %q: type %q, want Feature", r.ID, r.Type)
	}
	if r.ID == "" {
		return Item{}, fmt.Errorf("stac: parse item: no id")
	}
	it := Item{
		ID: r.ID, Collection: r.Collection, Bbox: r.Bbox, Assets: r.Assets, Properties: r.Properties,
		Links: r.Links, Raw: json.RawMessage(raw), Base: pageURL,
	}
	if len(r.Geometry) > 0 && string(r.Geometry) != "null" {
		// Footprints are polygons; anything else is left out rather than
		// failing the search, since imagery does not need it.
		if mp, err := geo.ParseGeometry(r.Geometry); err == nil {
			it.Geometry = mp
		}
	}
	for _, key := range []string{"datetime", "start_datetime"} {
		if t, ok := propTime(r.Properties, key); ok {
			it.Datetime = t
			break
		}
	}
	it.Created, _ = propTime(r.Properties, "created")
	it.Updated, _ = propTime(r.Properties, "updated")
	if v, ok := r.Properties["eo:cloud_cover"]; ok {
		var f float64
		if json.Unmarshal(v, &f) == nil {
			it.CloudCover = &f
		}
	}
	for _, l := range r.Links {
		if l.Rel == "self" && l.Href != "" {
			if u, err := resolve(pageURL, l.Href); err == nil && sameOrigin(u, pageURL) {
				it.Self = u
			}
			break
		}
	}
	if it.Collection == "" {
		// Older items name their collection only in a link.
		for _, l := range r.Links {
			if l.Rel == "collection" {
				if u, err := url.Parse(l.Href); err == nil {
					it.Collection = path.Base(strings.TrimSuffix(u.Path, "/"))
				}
				break
			}
		}
	}
	return it, nil
}

// propTime reads an RFC 3339 time property (fractions of a second allowed).
func propTime(props map[string]json.RawMessage, key string) (time.Time, bool) {
	var s string
	if raw, ok := props[key]; !ok || json.Unmarshal(raw, &s) != nil {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// sameOrigin: u is an http(s) URL with page's scheme and host.
func sameOrigin(u, page string) bool {
	a, err1 := url.Parse(u)
	b, err2 := url.Parse(page)
	return err1 == nil && err2 == nil && (a.Scheme == "http" || a.Scheme == "https") &&
		strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// resolve resolves href against base.
func resolve(base, href string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	h, err := url.Parse(href)
	if err != nil {
		return "", err
	}
	return b.ResolveReference(h).String(), nil
}

// OpenScene opens item as an imagery.Scene without fetching it again. Band
// files are read lazily with HTTP Range requests through the client's
// HTTPClient (so through its SSRF guard) unless opts.HTTPClient is set.
// Asset URLs naming literal private addresses are refused before any
// request unless the guard allows their origin. Relative hrefs resolve
// against item.Base (where the item was fetched from), and an href naming a
// local file is refused. Requests to hosts that need signing (Planetary
// Computer's blob storage unless SignHost says otherwise) carry the
// Signer's token for the item's collection; the scene's sources stay
// unsigned.
func (c *Client) OpenScene(ctx context.Context, item Item, opts imagery.SceneOptions) (*imagery.Scene, error) {
	for key, a := range item.Assets {
		u, err := resolve(item.Base, a.Href)
		if err != nil {
			return nil, fmt.Errorf("stac: item %s asset %s: %w", item.ID, key, err)
		}
		if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
			if err := c.checkURL(u); err != nil {
				return nil, fmt.Errorf("item %s asset %s: %w", item.ID, key, err)
			}
		}
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = c.httpClient()
	}
	opts.HTTPClient = signingClient(opts.HTTPClient, c.signer(), item.Collection, c.signHost())
	s, err := imagery.OpenSTACItem(ctx, item.Raw, item.Base, opts)
	if err != nil {
		return nil, fmt.Errorf("stac: item %s: %w", item.ID, err)
	}
	return s, nil
}

// GetItem fetches one item by URL (e.g. {root}/collections/{c}/items/{id}).
func (c *Client) GetItem(ctx context.Context, itemURL string) (Item, error) {
	data, err := c.do(ctx, request{method: "GET", url: itemURL})
	if err != nil {
		return Item{}, err
	}
	return ParseItem(data, itemURL)
}

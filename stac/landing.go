package stac

import (
	"context"
	"net/http"
	"strings"
)

// Landing is a STAC API landing page: what the API conforms to and its links.
type Landing struct {
	ConformsTo []string `json:"conformsTo"`
	Links      []Link   `json:"links"`
	// URL is where the page was read (the API root).
	URL string `json:"-"`
}

// GetLanding reads the landing page at root (GET {root}).
func (c *Client) GetLanding(ctx context.Context, root string) (*Landing, error) {
	var l Landing
	if err := c.getJSON(ctx, root, &l); err != nil {
		return nil, err
	}
	l.URL = root
	return &l, nil
}

// conforms reports whether a conformance class contains one of substrs.
func (l *Landing) conforms(substrs ...string) bool {
	for _, c := range l.ConformsTo {
		for _, s := range substrs {
			if strings.Contains(c, s) {
				return true
			}
		}
	}
	return false
}

// SupportsFilter: the API declares the Filter extension with CQL2 JSON.
func (l *Landing) SupportsFilter() bool {
	return l.conforms("item-search#filter", "/cql2/1.0/conf/cql2-json", "features-filter")
}

// SupportsQuery: the API declares the Query extension.
func (l *Landing) SupportsQuery() bool { return l.conforms("item-search#query") }

// SearchURL is the item search endpoint: the rel "search" link (preferring
// one for POST), else {root}/search.
func (l *Landing) SearchURL() string {
	var get string
	for _, k := range l.Links {
		if k.Rel != "search" || k.Href == "" {
			continue
		}
		u, err := resolve(strings.TrimSuffix(l.URL, "/")+"/", k.Href)
		if err != nil {
			continue
		}
		if strings.EqualFold(k.Method, http.MethodPost) {
			return u
		}
		if get == "" {
			get = u
		}
	}
	if get != "" {
		return get
	}
	return strings.TrimSuffix(l.URL, "/") + "/search"
}

// Package render turns an index product (imagery.Product) into what is
// served for it: its colormapped PNG (spec §2.6) and its §2.5 JSON
// document. The archive renders the products it ingests with it and the
// offline `cropkit index` the files it writes, so an index looks the same
// everywhere.
package render

import (
	"fmt"
	"io"

	"github.com/cropkit/cropkit/colormap"
	"github.com/cropkit/cropkit/imagery"
)

// Renderer renders the products of one index catalogue. It is safe for
// concurrent use (the PNG encoder pools its buffers).
type Renderer struct {
	cat *imagery.Catalogue
	png colormap.Encoder
}

// New returns a renderer of cat's indices.
func New(cat *imagery.Catalogue) *Renderer { return &Renderer{cat: cat} }

// Colormap is the colormap an index is rendered with: the spec's (§2.6),
// or colormap.Default's ramp over the index's usual range for indices the
// spec does not list.
func (r *Renderer) Colormap(index string) (colormap.Colormap, error) {
	ix, _ := r.cat.Lookup(index)
	return colormap.Lookup(index, ix.Range)
}

// PNG writes p's colormapped PNG to w.
func (r *Renderer) PNG(w io.Writer, p imagery.Product) error {
	cm, err := r.Colormap(p.Index)
	if err != nil {
		return err
	}
	if err := r.png.Encode(w, p.Values, p.Grid.Cols, p.Grid.Rows, cm, colormap.PNGOptions{}); err != nil {
		return fmt.Errorf("render %s png: %w", p.Index, err)
	}
	return nil
}

// Previous is the image of the same field and index before a product: its
// mean and date give the document's mean_variation and previous_date.
type Previous struct {
	Mean float64
	Date string // YYYY-MM-DD
}

// Report appends p's §2.5 document to dst (reuse dst across products: a
// document is about 10 bytes per pixel). prev is nil for a field's first
// image (mean_variation 0, previous_date null).
func (r *Renderer) Report(dst []byte, p imagery.Product, prev *Previous) ([]byte, error) {
	var prevMean *float64
	if prev != nil {
		prevMean = &prev.Mean
	}
	rep, err := imagery.NewReport(p, prevMean)
	if err != nil {
		return dst, fmt.Errorf("%s report: %w", p.Index, err)
	}
	if prev != nil {
		rep.PreviousDate = prev.Date
	}
	// AppendJSON directly: json.Marshal would re-validate and compact the
	// whole pixel array, which costs more than writing it.
	out, err := rep.AppendJSON(dst)
	if err != nil {
		return dst, fmt.Errorf("%s report: %w", p.Index, err)
	}
	return out, nil
}

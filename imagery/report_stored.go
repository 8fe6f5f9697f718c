package imagery

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
)

// ReportValues reads the pixel values of a stored §2.5 document (row-major,
// NaN where null): n values under the index's key. The array is scanned
// directly (decoding the whole document with encoding/json took more than
// half of a 10,000 ha zone request); a document the scan does not
// understand is decoded in full.
func ReportValues(doc []byte, index string, n int) ([]float64, error) {
	if v, ok := scanIndexValues(doc, index, n); ok {
		return v, nil
	}
	var rep Report
	if err := json.Unmarshal(doc, &rep); err != nil {
		return nil, err
	}
	if len(rep.Values) != n {
		return nil, errors.New("report: pixel count does not match its grid")
	}
	return rep.Values, nil
}

// scanIndexValues reads the 2-D array of key index ([[v, null, …], …]) of
// a §2.5 document as n values; ok is false on anything unexpected.
func scanIndexValues(doc []byte, index string, n int) (values []float64, ok bool) {
	key := append(strconv.AppendQuote(nil, index), ':')
	i := bytes.Index(doc, key)
	if i < 0 {
		return nil, false
	}
	p := i + len(key)
	out := make([]float64, 0, n)
	depth := 0
	for p < len(doc) {
		switch c := doc[p]; {
		case c == '[':
			depth++
			if depth > 2 {
				return nil, false
			}
			p++
		case c == ']':
			depth--
			p++
			if depth == 0 {
				return out, len(out) == n
			}
		case c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r':
			p++
		case depth != 2:
			return nil, false
		case c == 'n':
			if !bytes.HasPrefix(doc[p:], []byte("null")) {
				return nil, false
			}
			out = append(out, math.NaN())
			p += 4
		default:
			end := p
			for end < len(doc) && doc[end] != ',' && doc[end] != ']' && doc[end] != ' ' {
				end++
			}
			v, err := strconv.ParseFloat(string(doc[p:end]), 64)
			if err != nil {
				return nil, false
			}
			out = append(out, v)
			p = end
		}
		if len(out) > n {
			return nil, false
		}
	}
	return nil, false
}

// SetReportVariation sets the mean_variation member of a §2.5 document (a
// stored one carries null, or a value of an earlier call) to mv and its
// previous_date member to prev ("" writes null), adding previous_date when
// absent. Values in the document are numbers or null, so the keys cannot
// occur elsewhere.
func SetReportVariation(doc []byte, mv float64, prev string) ([]byte, error) {
	const key, prevKey = `"mean_variation":`, `,"previous_date":`
	i := bytes.LastIndex(doc, []byte(key))
	if i < 0 {
		return nil, errors.New("report has no mean_variation")
	}
	start := i + len(key)
	end := start + bytes.IndexAny(doc[start:], ",}")
	if end < start {
		return nil, errors.New("report mean_variation is not terminated")
	}
	if bytes.HasPrefix(doc[end:], []byte(prevKey)) {
		rest := end + len(prevKey)
		stop := bytes.IndexAny(doc[rest:], ",}")
		if stop < 0 {
			return nil, errors.New("report previous_date is not terminated")
		}
		end = rest + stop
	}
	if math.IsNaN(mv) || math.IsInf(mv, 0) {
		mv = 0
	}
	out := make([]byte, 0, len(doc)+64)
	out = append(out, doc[:start]...)
	out = strconv.AppendFloat(out, mv, 'g', -1, 64)
	out = append(out, prevKey...)
	if prev == "" {
		out = append(out, "null"...)
	} else {
		out = strconv.AppendQuote(out, prev)
	}
	return append(out, doc[end:]...), nil
}

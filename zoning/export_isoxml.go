package zoning

import (
	"archive/zip"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/paulmach/orb"
	orbgeo "github.com/paulmach/orb/geo"
)

// ISOXMLOptions tunes WriteISOXMLZip.
type ISOXMLOptions struct {
	// FieldName is the partfield's designator (default "field").
	FieldName string
	// Modified is TASKDATA.XML's modification time in the zip (default
	// time.Now().UTC(); pass a fixed time for reproducible output).
	Modified time.Time
}

// The ISO 11783-10 setpoint DDIs (ISOBUS data dictionary, isobus.net) and
// the scale from cropkit's rate units to their units.
const (
	// DDI 0006 Setpoint Mass Per Area Application Rate, mg/m², resolution 1:
	// 1 kg/ha = 10⁶ mg / 10⁴ m² = 100 mg/m².
	ddiMassPerArea = "0006"
	kgHaToMgM2     = 100.0
	// DDI 000B Setpoint Count Per Area Application Rate, 1/m², resolution
	// 0.001: 1 seed/ha = 10⁻⁴ /m² = 0.1 units of 0.001/m².
	ddiCountPerArea = "000B"
	seedsHaToUnits  = 0.1
)

type (
	isoTaskData struct {
		XMLName      xml.Name `xml:"ISO11783_TaskData"`
		VersionMajor int      `xml:"VersionMajor,attr"`
		VersionMinor int      `xml:"VersionMinor,attr"`
		Manufacturer string   `xml:"ManagementSoftwareManufacturer,attr"`
		Version      string   `xml:"ManagementSoftwareVersion,attr"`
		Origin       int      `xml:"DataTransferOrigin,attr"`
		PDT          isoPDT   `xml:"PDT"`
		PFD          isoPFD   `xml:"PFD"`
		TSK          isoTSK   `xml:"TSK"`
		VPN          isoVPN   `xml:"VPN"`
	}
	isoPDT struct {
		ID   string `xml:"A,attr"`
		Name string `xml:"B,attr"`
	}
	isoVPN struct {
		ID       string `xml:"A,attr"`
		Offset   int64  `xml:"B,attr"`
		Scale    string `xml:"C,attr"`
		Decimals int    `xml:"D,attr"`
		Unit     string `xml:"E,attr"`
	}
	isoPFD struct {
		ID       string   `xml:"A,attr"`
		Name     string   `xml:"C,attr"`
		Area     int64    `xml:"D,attr"`
		Polygons []isoPLN `xml:"PLN"`
	}
	isoPLN struct {
		Type  int      `xml:"A,attr"`
		Name  string   `xml:"B,attr,omitempty"`
		Lines []isoLSG `xml:"LSG"`
	}
	isoLSG struct {
		Type   int      `xml:"A,attr"`
		Points []isoPNT `xml:"PNT"`
	}
	isoPNT struct {
		Type  int    `xml:"A,attr"`
		North string `xml:"C,attr"`
		East  string `xml:"D,attr"`
	}
	isoTSK struct {
		ID           string   `xml:"A,attr"`
		Name         string   `xml:"B,attr"`
		Partfield    string   `xml:"E,attr"`
		Status       int      `xml:"G,attr"`
		PositionLost int      `xml:"I,attr"`
		OutOfField   int      `xml:"J,attr"`
		Zones        []isoTZN `xml:"TZN"`
	}
	isoTZN struct {
		Code      int      `xml:"A,attr"`
		Name      string   `xml:"B,attr"`
		Variables []isoPDV `xml:"PDV"`
		Polygons  []isoPLN `xml:"PLN"`
	}
	isoPDV struct {
		DDI          string `xml:"A,attr"`
		Value        int64  `xml:"B,attr"`
		Product      string `xml:"C,attr"`
		Presentation string `xml:"E,attr"`
	}
)

// WriteISOXMLZip writes c as an ISO 11783-10 version 4 task set: a zip
// holding TASKDATA/TASKDATA.XML with one partfield (its boundary), one
// product, and one planned task with a treatment zone per zone whose
// process data variable is the setpoint rate in the DDI's units: DDI 0006
// (mass per area, mg/m²; 1 kg/ha = 100) for n_fertilizer, DDI 000B (count
// per area, 0.001/m²; 80,000 seeds/ha = 8,000) for seeding. A value
// presentation shows the rates back in kg/ha or seeds/ha. Treatment zone
// code 0 (rate 0) is used out of the field and when the position is lost.
// Zone codes must lie in 1..254.
func WriteISOXMLZip(w io.Writer, c *Collection, opts ISOXMLOptions) error {
	c, err := c.Reproject(4326)
	if err != nil {
		return err
	}
	if opts.FieldName == "" {
		opts.FieldName = "field"
	}
	ddi, scale, product := ddiMassPerArea, kgHaToMgM2, "Nitrogen"
	vpn := isoVPN{ID: "VPN1", Scale: "0.01", Decimals: 1, Unit: "kg/ha"}
	if c.Type == Seeding {
		ddi, scale, product = ddiCountPerArea, seedsHaToUnits, "Seed"
		vpn = isoVPN{ID: "VPN1", Scale: "10", Decimals: 0, Unit: "seeds/ha"}
	}
	doc := isoTaskData{
		VersionMajor: 4, VersionMinor: 3, Manufacturer: "cropkit", Version: "1.0", Origin: 1,
		PDT: isoPDT{ID: "PDT1", Name: product},
		VPN: vpn,
		PFD: isoPFD{ID: "PFD1", Name: opts.FieldName},
		TSK: isoTSK{ID: "TSK1", Name: opts.FieldName + " prescription", Partfield: "PFD1", Status: 1},
	}
	boundary := c.Boundary
	if boundary == nil {
		for _, f := range c.Features {
			boundary = append(boundary, f.Polygon)
		}
	}
	var area float64
	for _, p := range boundary {
		doc.PFD.Polygons = append(doc.PFD.Polygons, isoPolygon(p, 1, ""))
		area += math.Abs(orbgeo.Area(p))
	}
	doc.PFD.Area = int64(math.Round(area))
	doc.TSK.Zones = append(doc.TSK.Zones, isoTZN{Code: 0, Name: "out of field",
		Variables: []isoPDV{{DDI: ddi, Value: 0, Product: "PDT1", Presentation: "VPN1"}}})
	for _, z := range c.Zones() {
		if z < 1 || z > 254 {
			return fmt.Errorf("isoxml: zone %d outside treatment zone codes 1..254", z)
		}
		tzn := isoTZN{Code: z, Name: "Zone " + strconv.Itoa(z)}
		for _, f := range c.Features {
			if f.Zone != z {
				continue
			}
			if len(tzn.Variables) == 0 {
				tzn.Variables = []isoPDV{{DDI: ddi, Value: int64(math.Round(finiteOr0(f.Dose) * scale)), Product: "PDT1", Presentation: "VPN1"}}
			}
			tzn.Polygons = append(tzn.Polygons, isoPolygon(f.Polygon, 2, ""))
		}
		doc.TSK.Zones = append(doc.TSK.Zones, tzn)
	}
	if opts.Modified.IsZero() {
		opts.Modified = time.Now().UTC()
	}
	zw := zip.NewWriter(w)
	f, err := zw.CreateHeader(&zip.FileHeader{Name: "TASKDATA/TASKDATA.XML", Method: zip.Deflate, Modified: opts.Modified})
	if err != nil {
		return fmt.Errorf("isoxml: %w", err)
	}
	if _, err := io.WriteString(f, xml.Header); err != nil {
		return fmt.Errorf("isoxml: %w", err)
	}
	enc := xml.NewEncoder(f)
	enc.Indent("", " ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("isoxml: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("isoxml: %w", err)
	}
	return nil
}

// isoPolygon converts a polygon to a PLN: exterior LSG type 1, holes type 2,
// points of type 2 ("other") with latitude C and longitude D.
func isoPolygon(p orb.Polygon, typ int, name string) isoPLN {
	pln := isoPLN{Type: typ, Name: name}
	for i, r := range p {
		lsg := isoLSG{Type: 1}
		if i > 0 {
			lsg.Type = 2
		}
		for _, q := range r {
			lsg.Points = append(lsg.Points, isoPNT{Type: 2,
				North: strconv.FormatFloat(q[1], 'f', 9, 64), East: strconv.FormatFloat(q[0], 'f', 9, 64)})
		}
		pln.Lines = append(pln.Lines, lsg)
	}
	return pln
}

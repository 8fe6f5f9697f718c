package colormap_test

import (
	"bytes"
	"fmt"
	"image/png"
	"math"

	"github.com/cropkit/cropkit/colormap"
)

func ExampleForIndex() {
	c, ok := colormap.ForIndex("ndvi")
	fmt.Println(ok, c.Start, c.Stop, len(c.Hex), c.Hex[0])
	fmt.Println(c.Color(0.5), c.Color(-1), c.Color(math.NaN()))
	// Output:
	// true 0 1 11 #a50026
	// {249 247 174 255} {165 0 38 255} {0 0 0 0}
}

func ExampleDefault() {
	// An index without a spec colormap, e.g. a user-registered GNDVI over [-1, 1].
	c, err := colormap.Default("gndvi", -1, 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Index, c.Color(1))
	// Output: gndvi {35 150 79 255}
}

func ExampleEncoder_Encode() {
	// A 3×2 field window: NaN outside the field is transparent.
	values := []float64{
		math.NaN(), 0.62, 0.71,
		0.55, 0.80, math.NaN(),
	}
	c, _ := colormap.ForIndex("ndvi")
	enc := colormap.NewEncoder() // keep one for many images
	var buf bytes.Buffer
	if err := enc.Encode(&buf, values, 3, 2, c, colormap.PNGOptions{Upscale: 4}); err != nil {
		panic(err)
	}
	img, _ := png.Decode(&buf)
	fmt.Println(img.Bounds().Dx(), img.Bounds().Dy())
	_, _, _, a := img.At(0, 0).RGBA()
	fmt.Println("corner alpha", a)
	// Output:
	// 12 8
	// corner alpha 0
}

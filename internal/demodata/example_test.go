package demodata_test

import (
	"fmt"
	"io/fs"
	"path"

	"github.com/cropkit/cropkit/internal/demodata"
)

func ExampleScenes() {
	scenes := demodata.Scenes()
	fmt.Println(len(scenes), scenes[0])
	b04, _ := fs.ReadFile(demodata.FS(), path.Join(scenes[3], "B04.tif"))
	fmt.Println(path.Base(scenes[3]), len(b04) > 0)
	// Output:
	// 8 flanders-31UES/2019-04-21
	// 2019-06-20 true
}

// Test-only: parse a cropkit ISOXML zip with the independent isoxml package
// and print what a terminal would see as JSON on stdout.
const { readFileSync } = require('fs')
const { ISOXMLManager } = require('isoxml')

async function main () {
  const data = readFileSync(process.argv[2])
  const m = new ISOXMLManager()
  await m.parseISOXMLFile(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), 'application/zip')
  const root = m.rootElement.attributes
  const out = {
    version: m.options.version,
    warnings: m.getWarnings(),
    partfields: (root.Partfield || []).map(p => ({
      designator: p.attributes.PartfieldDesignator,
      area: p.attributes.PartfieldArea,
      polygons: (p.attributes.PolygonnonTreatmentZoneonly || []).length
    })),
    products: (root.Product || []).map(p => p.attributes.ProductDesignator),
    tasks: (root.Task || []).map(t => ({
      designator: t.attributes.TaskDesignator,
      status: t.attributes.TaskStatus,
      zones: (t.attributes.TreatmentZone || []).map(z => ({
        code: z.attributes.TreatmentZoneCode,
        designator: z.attributes.TreatmentZoneDesignator,
        polygons: (z.attributes.PolygonTreatmentZoneonly || []).map(p => ({
          type: p.attributes.PolygonType,
          rings: (p.attributes.LineString || []).map(l => (l.attributes.Point || []).length)
        })),
        pdv: (z.attributes.ProcessDataVariable || []).map(v => ({
          ddi: v.attributes.ProcessDataDDI,
          value: v.attributes.ProcessDataValue
        }))
      }))
    }))
  }
  process.stdout.write(JSON.stringify(out))
}

main().catch(e => { console.error(e); process.exit(1) })

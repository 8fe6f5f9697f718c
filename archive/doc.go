// Package archive is cropkit's core: the use cases every door shares
// (the HTTP server, the CLI, the catalogue watcher). It holds accounts and
// tokens, fields and their seasons, scene uploads, the ingestion of scenes
// into per-field products (statistics, index rasters, PNGs, the §2.5
// document), product queries and history, zones and prescriptions,
// boundary detection requests, and the notifications ingestion emits; it
// knows nothing of HTTP.
//
// The core decides; storage keeps. It states what it needs from storage as
// two interfaces, Store (the rows: accounts, fields, products, catalogue
// items, the webhook outbox, in transactions) and Blobs (the files, by key,
// written atomically), and imports no database driver, no SQL and no object
// storage SDK. The implementations live beneath it: archive/store (SQLite
// embedded, or PostgreSQL, over one set of queries), archive/blobs (a
// directory, or an object-storage bucket), and archive/backend wires them
// into an Archive from a data directory or URLs. A program may bring its
// own Store or Blobs to New.
//
// Files are installed crash-consistently: a new blob is written under a
// new key, the rows that refer to it committed, and only then the replaced
// blob deleted; Sweep removes what a crash left unreferenced.
package archive

package main

// The binary's object storage beyond S3 for --blobs: these drivers register
// their URL schemes with gocloud.dev/blob. archive/blobs registers only
// s3:// and file://, so a program embedding the archive does not carry the
// Azure and Google Cloud SDKs unless it imports them too.
import (
	_ "gocloud.dev/blob/azureblob" // azblob:// containers (credentials from the AZURE_* environment)
	_ "gocloud.dev/blob/gcsblob"   // gs:// buckets (application default credentials)
)

#!/usr/bin/env node
// Google's own Node.js client for Cloud Storage (@google-cloud/storage, installed by
// `make node-client`) against the fake server at $FAKEGCS_URL: a second real client that
// checks the fake. One operation a run; what it finds goes to stdout as one JSON line, a
// failure to stderr as "node_client: OP: what went wrong" with exit status 1.
//
//   node_client.js multipart BUCKET NAME FILE      upload in one multipart request
//   node_client.js resumable BUCKET NAME FILE [CHUNK]
//                  a resumable upload of a stream whose length the client is not told (one
//                  request `bytes 0-*/*`, or CHUNK-byte requests `bytes A-B/*`, the last with
//                  the total)
//   node_client.js list BUCKET PREFIX DELIMITER [PAGE]   {"items": [...], "prefixes": [...]}
//   node_client.js download BUCKET NAME OUT        a download checked by CRC32C
//   node_client.js sliced BUCKET NAME OUT CHUNK [N]    TransferManager.downloadFileInChunks
//   node_client.js chunked BUCKET NAME FILE CHUNK [N]  TransferManager.uploadFileInChunks (XML API)
//                  (N chunks at a time, 4 if not given)
//   node_client.js mirror BUCKET PREFIX OUTDIR     every object under PREFIX, checked, into OUTDIR
"use strict";

const fs = require("fs");
const path = require("path");
const { Readable } = require("stream");
const { pipeline } = require("stream/promises");

const endpoint = process.env.FAKEGCS_URL;
// The client's documented way to a custom endpoint: apiEndpoint, and no credentials
// (useAuthWithCustomEndpoint false). STORAGE_EMULATOR_HOST would take precedence.
delete process.env.STORAGE_EMULATOR_HOST;
const { Storage, TransferManager } = require("@google-cloud/storage");

const [op, ...args] = process.argv.slice(2);

function fail(msg) {
	process.stderr.write(`node_client: ${op}: ${msg}\n`);
	process.exit(1);
}

if (!endpoint) fail("FAKEGCS_URL is not set");
const options = {
	apiEndpoint: endpoint,
	projectId: "fake-project",
	useAuthWithCustomEndpoint: false,
	retryOptions: { maxRetries: 2, totalTimeout: 30, maxRetryDelay: 1 },
};
const storage = new Storage(options);

function out(obj) {
	process.stdout.write(JSON.stringify(obj) + "\n");
}

function brief(m) {
	return { name: m.name, size: Number(m.size), crc32c: m.crc32c, md5Hash: m.md5Hash || null, generation: m.generation };
}

// A stream that hands over FILE in pieces without saying how long it is.
function unknownLength(file) {
	const src = fs.createReadStream(file, { highWaterMark: 256 * 1024 });
	return Readable.from(src, { objectMode: false });
}

// The XML API's multipart upload goes to https://BUCKET.<endpoint host>/NAME: the client
// builds that URL itself (with an IP address for a host it is not even a valid URL) and it
// cannot be pointed at a loopback port. So a client whose endpoint is named "localhost" has
// its XML requests (made through the auth client, which would also want credentials) sent
// as they are to the path-style URL of the fake, http://HOST:PORT/BUCKET/NAME, without
// credentials.
function xmlApiOnFake() {
	const gaxios = require("gaxios");
	const named = new URL(endpoint);
	named.hostname = "localhost";
	const s = new Storage({ ...options, apiEndpoint: named.origin });
	s.authClient.request = (opts) => {
		const u = new URL(opts.url);
		if (!u.hostname.endsWith(".localhost")) throw new Error(`unexpected XML API URL ${opts.url}`);
		const bucket = u.hostname.slice(0, -".localhost".length);
		// Read as text: gaxios 6 hands an application/xml body over as a Blob, which the
		// helper's XML parser cannot read (see the fake's README).
		return gaxios.request({ ...opts, responseType: "text", url: `${endpoint}/${bucket}${u.pathname}${u.search}` });
	};
	return s;
}

async function main() {
	switch (op) {
	case "multipart": {
		const [bucket, name, file] = args;
		const [f] = await storage.bucket(bucket).upload(file, { destination: name, resumable: false, validation: "crc32c" });
		out(brief(f.metadata));
		break;
	}
	case "resumable": {
		const [bucket, name, file, chunk] = args;
		const f = storage.bucket(bucket).file(name);
		// Create-only (ifGenerationMatch=0), which also lets the client retry and resume.
		const opts = { resumable: true, validation: "crc32c", preconditionOpts: { ifGenerationMatch: 0 },
			metadata: { contentType: "application/octet-stream" } };
		if (chunk) opts.chunkSize = Number(chunk);
		await pipeline(unknownLength(file), f.createWriteStream(opts));
		const [m] = await f.getMetadata();
		out(brief(m));
		break;
	}
	case "list": {
		const [bucket, prefix, delimiter, page] = args;
		const items = [], prefixes = [];
		let query = { prefix, delimiter: delimiter || undefined, autoPaginate: false, maxResults: Number(page || 1000) };
		let pages = 0;
		while (query && pages < 1000) {
			const [files, next, resp] = await storage.bucket(bucket).getFiles(query);
			for (const f of files) items.push(f.name);
			for (const p of (resp && resp.prefixes) || []) prefixes.push(p);
			query = next;
			pages++;
		}
		out({ items, prefixes, pages });
		break;
	}
	case "download": {
		const [bucket, name, dest] = args;
		await storage.bucket(bucket).file(name).download({ destination: dest, validation: "crc32c" });
		out({ name, size: fs.statSync(dest).size });
		break;
	}
	case "sliced": {
		const [bucket, name, dest, chunk, n] = args;
		const tm = new TransferManager(storage.bucket(bucket));
		await tm.downloadFileInChunks(name, { destination: dest, chunkSizeBytes: Number(chunk),
			concurrencyLimit: Number(n || 4), validation: "crc32c", noReturnData: true });
		out({ name, size: fs.statSync(dest).size });
		break;
	}
	case "chunked": {
		const [bucket, name, file, chunk, n] = args;
		const tm = new TransferManager(xmlApiOnFake().bucket(bucket));
		await tm.uploadFileInChunks(file, { uploadName: name, chunkSizeBytes: Number(chunk),
			concurrencyLimit: Number(n || 4), validation: "crc32c" });
		const [m] = await storage.bucket(bucket).file(name).getMetadata();
		out(brief(m));
		break;
	}
	case "mirror": {
		const [bucket, prefix, dir] = args;
		const [files] = await storage.bucket(bucket).getFiles({ prefix });
		const names = [];
		for (const f of files) {
			names.push(f.name);
			const dest = path.join(dir, f.name.slice(prefix.length));
			if (f.name.endsWith("/")) {
				fs.mkdirSync(dest, { recursive: true });
				continue;
			}
			fs.mkdirSync(path.dirname(dest), { recursive: true });
			await f.download({ destination: dest, validation: "crc32c" });
		}
		out({ objects: names.length, names });
		break;
	}
	default:
		fail("unknown operation (see the comment at the top of node_client.js)");
	}
}

main().catch((e) => { if (process.env.NODE_CLIENT_DEBUG) console.error(e); fail((e && (e.code ? `${e.code} ` : "") + (e.message || e)) || String(e)); });

import type { ContentBlock, FileBlock } from '../../domain/ledger.js';
import type { Part } from './types.js';

/** What a model call needs to know about an uploaded file. */
export interface StoredFile {
  id: string;
  filename: string;
  content_type: string;
  size_bytes: number;
}

/** Where file bytes come from; scoped by org, so a foreign file id is "not found". */
export interface FileSource {
  get(orgId: string, id: string): Promise<StoredFile | null>;
  bytes(id: string): Promise<Buffer>;
}

/** A part no provider format can take; the message fails with this text (not retried). */
export class PartRefused extends Error {
  override name = 'PartRefused';
}

/**
 * Per-part limits, the smallest the three providers share: Anthropic takes
 * images up to 5 MB and requests up to 32 MB; PDFs ride in the request body.
 */
export const PART_LIMITS = Object.freeze({ image: 5 * 1024 * 1024, document: 24 * 1024 * 1024, text: 1024 * 1024, total: 28 * 1024 * 1024 });

export const IMAGE_TYPES: readonly string[] = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
const TEXT_TYPES = /^(text\/[a-z0-9.+-]+|application\/(json|xml|yaml|x-yaml|csv|x-ndjson|javascript|x-sh|sql|[a-z0-9.-]+\+(json|xml)))$/;

export function fileKey(block: FileBlock): string {
  return `${block.type}:${block.file_id}`;
}

function over(f: StoredFile, kind: keyof typeof PART_LIMITS): void {
  if (f.size_bytes > PART_LIMITS[kind]) throw new PartRefused(`file ${f.id} (${f.filename}) is ${f.size_bytes} bytes; ${kind} parts may be at most ${PART_LIMITS[kind]} bytes.`);
}

/** One content block as the part the model gets, in the canonical model every format serializes. */
async function partOf(src: FileSource, block: FileBlock, f: StoredFile): Promise<Part> {
  const type = f.content_type;
  if (IMAGE_TYPES.includes(type)) {
    over(f, 'image');
    return { type: 'image', source: { kind: 'base64', mediaType: type, data: (await src.bytes(f.id)).toString('base64') } };
  }
  if (block.type === 'image') throw new PartRefused(`image part ${f.id} (${f.filename}) is ${type}; images must be one of ${IMAGE_TYPES.join(', ')}.`);
  if (type === 'application/pdf') {
    over(f, 'document');
    return { type: 'document', mediaType: type, filename: f.filename, data: (await src.bytes(f.id)).toString('base64') };
  }
  if (TEXT_TYPES.test(type)) {
    over(f, 'text');
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(await src.bytes(f.id));
    } catch {
      throw new PartRefused(`file ${f.id} (${f.filename}) is declared ${type} but is not UTF-8 text.`);
    }
    // Extracted text works with every provider; the header tells the model which file it is.
    return { type: 'text', text: `<file name=${JSON.stringify(f.filename)} type=${JSON.stringify(type)}>\n${text}\n</file>` };
  }
  throw new PartRefused(`file ${f.id} (${f.filename}) is ${type}, which no model provider takes; send images (${IMAGE_TYPES.join(', ')}), PDF or UTF-8 text files.`);
}

/**
 * Loads every file and image part of the given blocks once, keyed by
 * `fileKey`. Throws PartRefused, naming the file, for a part that cannot
 * be sent: unknown or deleted, too large, or of a type no provider reads.
 */
export async function resolveFileParts(src: FileSource, orgId: string, blocks: ContentBlock[]): Promise<Map<string, Part>> {
  const out = new Map<string, Part>();
  let total = 0;
  for (const b of blocks) {
    if (b.type === 'text' || !b.file_id || out.has(fileKey(b))) continue;
    const f = await src.get(orgId, b.file_id);
    if (!f) throw new PartRefused(`file ${b.file_id} does not exist (it may have been deleted).`);
    total += f.size_bytes;
    if (total > PART_LIMITS.total) throw new PartRefused(`the files of this conversation add up to more than ${PART_LIMITS.total} bytes, the most one model call can carry.`);
    out.set(fileKey(b), await partOf(src, b, f));
  }
  return out;
}

import { ErrorType, TroupeError } from '../../domain/errors.js';
import type { ContentBlock } from '../../domain/ledger.js';
import type { FileStore } from '../../store/files.js';

/**
 * Every `file_id` in a message's content must name a file of the caller's
 * org. Another org's file is answered exactly like one that does not exist
 * (404), so ids cannot be probed across orgs. Checked before the message is
 * accepted, because once file parts reach models the reference is a read.
 */
export async function checkFileRefs(files: Pick<FileStore, 'missing'>, orgId: string, contents: { content: ContentBlock[]; param: string }[]): Promise<void> {
  const refs = contents.flatMap(({ content, param }) => content.flatMap((b, i) => ('file_id' in b ? [{ id: b.file_id, param: `${param}[${i}].file_id` }] : [])));
  if (refs.length === 0) return;
  const missing = new Set(await files.missing(orgId, refs.map((r) => r.id)));
  const first = refs.find((r) => missing.has(r.id));
  if (first) throw new TroupeError(404, ErrorType.notFound, 'file_not_found', `No such file: ${first.id}`, first.param);
}

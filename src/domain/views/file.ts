/** An uploaded file's record and its API view. */

/** An uploaded file's record; the bytes live in the `files` GridFS bucket under the same id. */
export interface FileDoc {
  _id: string;
  org_id: string;
  filename: string;
  content_type: string;
  size_bytes: number;
  created_at: Date;
}

export interface FileView {
  id: string;
  filename: string;
  size_bytes: number;
  content_type: string;
  created_at: string;
}

export function fileView(doc: FileDoc): FileView {
  return { id: doc._id, filename: doc.filename, size_bytes: doc.size_bytes, content_type: doc.content_type, created_at: doc.created_at.toISOString() };
}

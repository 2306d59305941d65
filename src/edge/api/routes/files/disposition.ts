/**
 * `attachment` with both an ASCII fallback and the RFC 5987 UTF-8 form, so
 * any stored leaf name downloads under its own name without letting quotes,
 * semicolons or non-ASCII characters break the header.
 */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\%;]/g, '_');
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

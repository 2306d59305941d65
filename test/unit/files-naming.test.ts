import assert from 'node:assert/strict';
import { contentDisposition } from '../../src/edge/api/routes/files/disposition.js';
import { isMultipart, leafName } from '../../src/edge/api/routes/files/multipart.js';
import { safeContentType } from '../../src/app/files/store-blob.js';

describe('file naming and types', () => {
  it('keeps the leaf of a path with either separator', () => {
    assert.equal(leafName('../../etc/passwd'), 'passwd');
    assert.equal(leafName('C:\\x\\y.txt'), 'y.txt');
    assert.equal(leafName('/abs/dir/name.tar.gz'), 'name.tar.gz');
    assert.equal(leafName('plain.txt'), 'plain.txt');
  });

  it('never yields an empty, dot or control-character name', () => {
    for (const raw of [undefined, '', '.', '..', 'dir/', 'a\\..', '\u0000\u0001']) assert.equal(leafName(raw), 'file', String(raw));
    assert.equal(leafName('a\r\nb.txt'), 'ab.txt');
    // A right-to-left override would show "invoiceexe.pdf" for an .exe.
    assert.equal(leafName('invoice\u202efdp.exe'), 'invoicefdp.exe');
    assert.equal(leafName('\u2066\u200b\ufeff'), 'file');
    assert.equal(leafName('x'.repeat(400)).length, 255);
  });

  it('recognises multipart/form-data only', () => {
    assert.equal(isMultipart('multipart/form-data; boundary=x'), true);
    assert.equal(isMultipart('Multipart/Form-Data;boundary=x'), true);
    assert.equal(isMultipart('multipart/mixed; boundary=x'), false);
    assert.equal(isMultipart(undefined), false);
  });

  it('keeps only plain type/subtype content types', () => {
    assert.equal(safeContentType('Image/PNG; charset=binary'), 'image/png');
    assert.equal(safeContentType('text/html\r\nX-Evil: 1'), 'application/octet-stream');
    assert.equal(safeContentType('nonsense'), 'application/octet-stream');
    assert.equal(safeContentType(undefined), 'application/octet-stream');
  });

  it('builds an attachment disposition that quotes safely and keeps UTF-8 names', () => {
    assert.equal(contentDisposition('report.pdf'), `attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`);
    const odd = contentDisposition('a"b;c\u00e9.txt');
    assert.match(odd, /^attachment; filename="a_b_c_\.txt"; filename\*=UTF-8''a%22b%3Bc%C3%A9\.txt$/);
  });
});

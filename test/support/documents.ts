/** A minimal PDF, base64: the fakes check a PDF's `%PDF-` header, as the vendors refuse bytes that are not one. */
export const PDF_BASE64 = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n').toString('base64');

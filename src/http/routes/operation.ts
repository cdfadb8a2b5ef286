import { DIALECTS } from '../../dialects/dialect.js';
import type { Operation, ParsedRequest } from '../../generation/operation.js';
import type { Pipeline } from '../../pipeline/pipeline.js';
import { readJsonBody } from '../body.js';
import { readMultipartBody } from '../multipart-body.js';
import type { Handler } from '../handler.js';
import { ResponseSink } from '../response-sink.js';

/** How much of a request body is read: a JSON body's bytes, and a multipart upload's (`max_upload_bytes`, read at each request so that a reload applies). */
export interface BodyLimits {
  readonly maxBodyBytes: number;
  readonly maxUploadBytes: () => number;
}

/** An operation mounted on a route: the HTTP request handed to the pipeline, its failure written in the caller's dialect. */
export function operationRoute<Request extends ParsedRequest>(pipeline: Pipeline, limits: BodyLimits, operation: Operation<Request>): Handler {
  const dialect = DIALECTS[operation.dialect];
  return async (ctx) => {
    ctx.dialect = dialect;
    const sink = new ResponseSink(ctx.res);
    try {
      const finished = await pipeline.run(operation, {
        requestId: ctx.requestId,
        route: ctx.route,
        startedAt: ctx.startedAt,
        wire: { headers: ctx.req.headers, path: ctx.path, query: new URLSearchParams(ctx.query) },
        readBody: () => (operation.body === 'multipart' ? readMultipartBody(ctx.req, limits.maxUploadBytes()) : readJsonBody(ctx.req, limits.maxBodyBytes)),
        sink,
        timer: ctx.res,
      });
      if (finished.record !== undefined) ctx.generation = finished.record;
      if (finished.error !== undefined) throw finished.error;
    } finally {
      sink.release();
    }
  };
}

import { DIALECTS } from '../../dialects/dialect.js';
import type { Operation, ParsedRequest } from '../../generation/operation.js';
import type { Pipeline } from '../../pipeline/pipeline.js';
import { readJsonBody } from '../body.js';
import type { Handler } from '../handler.js';
import { ResponseSink } from '../response-sink.js';

/** An operation mounted on a route: the HTTP request handed to the pipeline, its failure written in the caller's dialect. */
export function operationRoute<Request extends ParsedRequest>(pipeline: Pipeline, maxBodyBytes: number, operation: Operation<Request>): Handler {
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
        readBody: () => readJsonBody(ctx.req, maxBodyBytes),
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

/** The span pipeline's standard variables, which Sluice reads since OpenTelemetry SDK 3 leaves them to the application. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ROOT_CONTEXT, SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import { SamplingDecision, type Sampler } from '@opentelemetry/sdk-trace';
import { batchSettingsFromEnv, samplerFromEnv } from '../../../src/telemetry/tracing-env.js';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const decide = (sampler: Sampler, parentSampled?: boolean) => {
  const context = parentSampled === undefined ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, { traceId: TRACE, spanId: 'b7ad6b7169203331', traceFlags: parentSampled ? TraceFlags.SAMPLED : TraceFlags.NONE, isRemote: true });
  return sampler.shouldSample(context, TRACE, 'span', SpanKind.SERVER, {}, []).decision;
};

describe('OTEL_BSP_*', () => {
  test('each variable sets its batch-processor option; unset ones keep the SDK defaults', () => {
    assert.deepEqual(batchSettingsFromEnv({}), {});
    assert.deepEqual(batchSettingsFromEnv({ OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_BSP_EXPORT_TIMEOUT: '1000', OTEL_BSP_MAX_QUEUE_SIZE: '64', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: ' 32 ' }), {
      scheduledDelayMillis: 50,
      exportTimeoutMillis: 1000,
      maxQueueSize: 64,
      maxExportBatchSize: 32,
    });
    assert.deepEqual(batchSettingsFromEnv({ OTEL_BSP_SCHEDULE_DELAY: '0', OTEL_BSP_MAX_QUEUE_SIZE: '' }), { scheduledDelayMillis: 0 });
  });

  test('a value that is not a whole number, or a size of 0, stops start-up naming the variable', () => {
    assert.throws(() => batchSettingsFromEnv({ OTEL_BSP_SCHEDULE_DELAY: 'soon' }), /^Error: OTEL_BSP_SCHEDULE_DELAY must be a whole number, not 'soon'$/);
    assert.throws(() => batchSettingsFromEnv({ OTEL_BSP_MAX_QUEUE_SIZE: '0' }), /OTEL_BSP_MAX_QUEUE_SIZE must be a whole number above 0/);
    assert.throws(() => batchSettingsFromEnv({ OTEL_BSP_EXPORT_TIMEOUT: '1.5' }), /OTEL_BSP_EXPORT_TIMEOUT/);
  });
});

describe('OTEL_TRACES_SAMPLER', () => {
  test('the default follows the parent, sampling a root span', () => {
    const sampler = samplerFromEnv({});
    assert.equal(decide(sampler), SamplingDecision.RECORD_AND_SAMPLED);
    assert.equal(decide(sampler, false), SamplingDecision.NOT_RECORD);
    assert.equal(decide(sampler, true), SamplingDecision.RECORD_AND_SAMPLED);
  });

  test('always_on, always_off and the ratio samplers, with their parent-based forms', () => {
    assert.equal(decide(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'always_on' }), false), SamplingDecision.RECORD_AND_SAMPLED);
    assert.equal(decide(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'always_off' }), true), SamplingDecision.NOT_RECORD);
    assert.equal(decide(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' })), SamplingDecision.NOT_RECORD);
    assert.equal(decide(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1' })), SamplingDecision.RECORD_AND_SAMPLED);
    assert.equal(decide(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'parentbased_always_off' })), SamplingDecision.NOT_RECORD);
    assert.equal(decide(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'parentbased_always_off' }), true), SamplingDecision.RECORD_AND_SAMPLED);
    assert.equal(decide(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }), true), SamplingDecision.RECORD_AND_SAMPLED);
    assert.equal(decide(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' })), SamplingDecision.NOT_RECORD);
  });

  test('an unknown sampler or a ratio outside 0..1 stops start-up', () => {
    assert.throws(() => samplerFromEnv({ OTEL_TRACES_SAMPLER: 'jaeger_remote' }), /OTEL_TRACES_SAMPLER 'jaeger_remote' is not supported/);
    assert.throws(() => samplerFromEnv({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }), /OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, not '2'/);
    assert.throws(() => samplerFromEnv({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: 'half' }), /OTEL_TRACES_SAMPLER_ARG/);
  });
});

import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler, type BatchSpanProcessorOptions, type Sampler } from '@opentelemetry/sdk-trace';

type BatchSettings = Pick<BatchSpanProcessorOptions, 'scheduledDelayMillis' | 'exportTimeoutMillis' | 'maxQueueSize' | 'maxExportBatchSize'>;

/**
 * The standard OpenTelemetry variables for the span pipeline, which the SDK read itself up to its
 * version 2 and leaves to the application since 3: the batch processor's `OTEL_BSP_*` and the
 * sampler's `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG`. A value Sluice cannot honour stops
 * start-up, as a wrong protocol does.
 */
export function batchSettingsFromEnv(env: NodeJS.ProcessEnv): BatchSettings {
  const settings: { -readonly [K in keyof BatchSettings]: number } = {};
  const fields = {
    OTEL_BSP_SCHEDULE_DELAY: 'scheduledDelayMillis',
    OTEL_BSP_EXPORT_TIMEOUT: 'exportTimeoutMillis',
    OTEL_BSP_MAX_QUEUE_SIZE: 'maxQueueSize',
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 'maxExportBatchSize',
  } as const;
  for (const [name, field] of Object.entries(fields)) {
    const value = env[name]?.trim();
    if (value === undefined || value === '') continue;
    const number = Number(value);
    if (!Number.isInteger(number) || number < (field === 'scheduledDelayMillis' ? 0 : 1)) throw new Error(`${name} must be a whole number${field === 'scheduledDelayMillis' ? '' : ' above 0'}, not '${value.slice(0, 40)}'`);
    settings[field] = number;
  }
  return settings;
}

/** The sampler `OTEL_TRACES_SAMPLER` names (default: parentbased_always_on, as the specification says). */
export function samplerFromEnv(env: NodeJS.ProcessEnv): Sampler {
  const name = env.OTEL_TRACES_SAMPLER?.trim() || 'parentbased_always_on';
  const ratio = () => {
    const argument = env.OTEL_TRACES_SAMPLER_ARG?.trim();
    if (argument === undefined || argument === '') return 1;
    const value = Number(argument);
    if (!(value >= 0 && value <= 1)) throw new Error(`OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, not '${argument.slice(0, 40)}'`);
    return value;
  };
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio());
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio()) });
    default:
      throw new Error(`OTEL_TRACES_SAMPLER '${name.slice(0, 40)}' is not supported: use always_on, always_off, traceidratio or their parentbased_ forms`);
  }
}

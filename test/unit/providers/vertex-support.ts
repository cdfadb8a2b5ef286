import { after } from 'node:test';
import { startFakeVertex } from '../../fakes/fake-vertex.js';

/**
 * What the Vertex adapter's conformance runs share: a service account whose token endpoint (the
 * Vertex fake's, which verifies the signed assertion) always issues the same access token, so that
 * the recorded requests' `authorization` header is fixed. The recorded model answers come from the
 * replay upstream, not from this fake.
 */
export const VERTEX_TOKEN = 'ya29.vertex-replay-token';
export const VERTEX_PROJECT = 'sluice-replay';
export const VERTEX_LOCATION = 'europe-west4';

export async function vertexCredentials(): Promise<() => Readonly<Record<string, unknown>>> {
  const tokens = await startFakeVertex({ project: VERTEX_PROJECT, location: VERTEX_LOCATION, fixedToken: VERTEX_TOKEN });
  after(() => tokens.close());
  return () => ({ project: VERTEX_PROJECT, location: VERTEX_LOCATION, credentials: JSON.stringify(tokens.key) });
}

/**
 * The layering check (`npm run check:layers`): dependency-cruiser over src/ of the current folder,
 * with the rules of .dependency-cruiser.cjs beside package.json. It prints one line per violation
 * and exits 1 when there is any.
 *
 * It calls dependency-cruiser's API rather than its command, which exits with the number of errors:
 * 256 of them would exit 0.
 */
import { fileURLToPath } from 'node:url';
import { cruise } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';

const rules = fileURLToPath(new URL('../.dependency-cruiser.cjs', import.meta.url));
const options = await extractDepcruiseOptions(rules);
const result = await cruise(['src'], { ...options, outputType: 'err' });

process.stdout.write(typeof result.output === 'string' ? result.output : '');
process.exitCode = result.exitCode === 0 ? 0 : 1;

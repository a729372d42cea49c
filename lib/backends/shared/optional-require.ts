/**
 * Loads an optional peer dependency at run time, so that an app using only the Redis backend
 * does not need etcd3 installed (and the reverse). The message names the package to install.
 */
export function loadOptionalPackage<T>(packageName: string, backendName: string): T {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(packageName) as T;
  } catch (error) {
    if ((error as NodeJS.ErrnoException)?.code === 'MODULE_NOT_FOUND') {
      throw new Error(
        `The ${backendName} backend needs the "${packageName}" package, which is not installed. ` +
          `Run: npm install ${packageName}`,
      );
    }
    throw error;
  }
}

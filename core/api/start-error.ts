/**
 * A configuration the server cannot start with (an unreadable key file, a file that fails
 * validation): the binary prints the message, which names the flag and the file, and exits 2.
 */
export class StartError extends Error {}

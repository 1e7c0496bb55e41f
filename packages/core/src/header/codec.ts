import { InvalidArgumentError } from '../errors.js';
import { isHexId, validateVolumeName } from '../naming.js';
import {
  DATA_OFFSET_ALIGNMENT_BYTES,
  HEADER_MAGIC,
  HEADER_NAME_FIELD_BYTES,
  HEADER_SIZE,
  HEADER_VERSION,
  type HeaderVersion,
} from './constants.js';
import { crc32 } from './crc32.js';
import type { DecodeResult, HeaderFields } from './types.js';

/**
 * Byte offsets of header v1 and v2 (DESIGN.md §4, "Header v1", "Header
 * v2": one layout). Every integer is little-endian.
 */
const OFFSET = {
  magic: 0,
  version: 8,
  headerSize: 10,
  flags: 12,
  volumeId: 16,
  ownerId: 32,
  createdAt: 48,
  dataOffset: 56,
  requestedBytes: 64,
  nameLength: 72,
  name: 74,
  reserved: 330,
  checksum: 508,
} as const;

const ID_BYTES = 16;
const RESERVED_BYTES = OFFSET.checksum - OFFSET.reserved;

/**
 * Encodes a header (DESIGN.md §4): 512 bytes, little-endian, CRC-32 of
 * bytes 0–507 in bytes 508–511; version 2 unless `version` says 1.
 *
 * @param fields volume ID and owner ID as 32 lowercase hex digits;
 *   `createdAtMs` (Unix milliseconds), `dataOffsetBytes` (a positive multiple
 *   of 4096) and `requestedBytes` as non-negative safe integers; `name` as a
 *   name that fits the field (1–256 bytes of well-formed UTF-8, no NUL;
 *   new volumes have at most 128, MAX_NAME_BYTES).
 * @returns a new 512-byte Buffer.
 * @throws InvalidArgumentError when any field breaks those rules.
 */
export function encodeHeader(
  fields: HeaderFields,
  version: HeaderVersion = HEADER_VERSION,
): Buffer {
  // plain JavaScript callers may pass anything
  if (!([1, 2] as readonly number[]).includes(version)) {
    throw new InvalidArgumentError(`header version must be 1 or 2, got ${String(version)}`);
  }
  if (!isHexId(fields.volumeId)) {
    throw new InvalidArgumentError(
      `volume ID must be 32 lowercase hex digits, got "${fields.volumeId}"`,
    );
  }
  if (!isHexId(fields.ownerId)) {
    throw new InvalidArgumentError(
      `owner ID must be 32 lowercase hex digits, got "${fields.ownerId}"`,
    );
  }
  requireUint('createdAtMs', fields.createdAtMs);
  requireUint('requestedBytes', fields.requestedBytes);
  requireUint('dataOffsetBytes', fields.dataOffsetBytes);
  if (fields.dataOffsetBytes === 0 || fields.dataOffsetBytes % DATA_OFFSET_ALIGNMENT_BYTES !== 0) {
    throw new InvalidArgumentError(
      `dataOffsetBytes must be a positive multiple of ${DATA_OFFSET_ALIGNMENT_BYTES}, got ${fields.dataOffsetBytes}`,
    );
  }
  validateVolumeName(fields.name, 'header name', HEADER_NAME_FIELD_BYTES);
  const name = Buffer.from(fields.name, 'utf8');

  const buf = Buffer.alloc(HEADER_SIZE);
  buf.set(HEADER_MAGIC, OFFSET.magic);
  buf.writeUInt16LE(version, OFFSET.version);
  buf.writeUInt16LE(HEADER_SIZE, OFFSET.headerSize);
  buf.writeUInt32LE(0, OFFSET.flags);
  buf.write(fields.volumeId, OFFSET.volumeId, ID_BYTES, 'hex');
  buf.write(fields.ownerId, OFFSET.ownerId, ID_BYTES, 'hex');
  buf.writeBigUInt64LE(BigInt(fields.createdAtMs), OFFSET.createdAt);
  buf.writeBigUInt64LE(BigInt(fields.dataOffsetBytes), OFFSET.dataOffset);
  buf.writeBigUInt64LE(BigInt(fields.requestedBytes), OFFSET.requestedBytes);
  buf.writeUInt16LE(name.length, OFFSET.nameLength);
  name.copy(buf, OFFSET.name);
  buf.writeUInt32LE(crc32(buf.subarray(0, OFFSET.checksum)), OFFSET.checksum);
  return buf;
}

function requireUint(field: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(`${field} must be a non-negative safe integer, got ${value}`);
  }
}

/**
 * Decodes the header at the start of `buf` (DESIGN.md §4, "Decoding never
 * throws"). Only bytes 0–511 are read; a longer buffer (a whole 4096-byte
 * logical block) is fine.
 *
 * Checks, in order: magic (absent → `not-stamped`); version (0 → `corrupt`,
 * above 2 → `unsupported`, whatever follows); length; headerSize; checksum;
 * flags; nameLength (1–256); zero padding after the name; UTF-8 and NUL in
 * the name; reserved bytes 330–507; integers within 2^53; dataOffset a
 * positive multiple of 4096.
 *
 * @returns one of `ok | not-stamped | unsupported | corrupt`, each non-ok
 *   result with a reason a person can read. Never throws.
 */
export function decodeHeader(buf: Uint8Array): DecodeResult {
  const b = Buffer.from(buf.buffer, buf.byteOffset, Math.min(buf.byteLength, HEADER_SIZE));

  const magicLength = HEADER_MAGIC.length;
  if (b.length < magicLength || !b.subarray(0, magicLength).equals(HEADER_MAGIC)) {
    return {
      status: 'not-stamped',
      reason:
        b.length < magicLength
          ? `only ${b.length} bytes, too short to hold the lvstamp magic`
          : 'no lvstamp magic at byte 0',
    };
  }
  if (b.length < OFFSET.version + 2) {
    return { status: 'corrupt', reason: `truncated after the magic: only ${b.length} bytes` };
  }
  const version = b.readUInt16LE(OFFSET.version);
  if (version === 0) return { status: 'corrupt', reason: 'version is 0' };
  if (version > 2) {
    return {
      status: 'unsupported',
      version,
      reason: `header version ${version} is newer than the supported versions 1 and 2`,
    };
  }
  if (b.length < HEADER_SIZE) {
    return { status: 'corrupt', reason: `truncated: ${b.length} of ${HEADER_SIZE} bytes` };
  }
  const headerSize = b.readUInt16LE(OFFSET.headerSize);
  if (headerSize !== HEADER_SIZE) {
    return { status: 'corrupt', reason: `headerSize is ${headerSize}, expected ${HEADER_SIZE}` };
  }
  const stored = b.readUInt32LE(OFFSET.checksum);
  const computed = crc32(b.subarray(0, OFFSET.checksum));
  if (stored !== computed) {
    return {
      status: 'corrupt',
      reason: `checksum mismatch: stored 0x${hex32(stored)}, computed 0x${hex32(computed)}`,
    };
  }
  const flags = b.readUInt32LE(OFFSET.flags);
  if (flags !== 0) {
    return { status: 'corrupt', reason: `flags are 0x${hex32(flags)}, expected 0 (reserved)` };
  }
  const nameLength = b.readUInt16LE(OFFSET.nameLength);
  if (nameLength < 1 || nameLength > HEADER_NAME_FIELD_BYTES) {
    return {
      status: 'corrupt',
      reason: `nameLength is ${nameLength}, expected 1–${HEADER_NAME_FIELD_BYTES}`,
    };
  }
  const nameField = b.subarray(OFFSET.name, OFFSET.name + HEADER_NAME_FIELD_BYTES);
  const padding = firstNonZero(nameField.subarray(nameLength));
  if (padding !== -1) {
    return {
      status: 'corrupt',
      reason: `non-zero byte at offset ${OFFSET.name + nameLength + padding} in the name padding`,
    };
  }
  const name = decodeUtf8(nameField.subarray(0, nameLength));
  if (name === null) return { status: 'corrupt', reason: 'the name is not valid UTF-8' };
  if (name.includes('\0')) return { status: 'corrupt', reason: 'the name contains a NUL byte' };
  const reserved = firstNonZero(b.subarray(OFFSET.reserved, OFFSET.reserved + RESERVED_BYTES));
  if (reserved !== -1) {
    return {
      status: 'corrupt',
      reason: `non-zero reserved byte at offset ${OFFSET.reserved + reserved}`,
    };
  }

  const createdAtMs = readSafeUint64(b, OFFSET.createdAt);
  const dataOffsetBytes = readSafeUint64(b, OFFSET.dataOffset);
  const requestedBytes = readSafeUint64(b, OFFSET.requestedBytes);
  if (createdAtMs === null) return { status: 'corrupt', reason: 'createdAt exceeds 2^53' };
  if (requestedBytes === null) return { status: 'corrupt', reason: 'requestedBytes exceeds 2^53' };
  if (
    dataOffsetBytes === null ||
    dataOffsetBytes === 0 ||
    dataOffsetBytes % DATA_OFFSET_ALIGNMENT_BYTES !== 0
  ) {
    return {
      status: 'corrupt',
      reason: `dataOffset ${b.readBigUInt64LE(OFFSET.dataOffset)} is not a positive multiple of ${DATA_OFFSET_ALIGNMENT_BYTES}`,
    };
  }

  return {
    status: 'ok',
    version: version === 1 ? 1 : 2,
    header: {
      volumeId: b.toString('hex', OFFSET.volumeId, OFFSET.volumeId + ID_BYTES),
      ownerId: b.toString('hex', OFFSET.ownerId, OFFSET.ownerId + ID_BYTES),
      createdAtMs,
      dataOffsetBytes,
      requestedBytes,
      name,
    },
  };
}

/**
 * A few lines in plain English that explain a decode result, for the CLI's
 * `inspect` (DESIGN.md §4, "what callers may do").
 */
export function describeDecode(result: DecodeResult): string {
  switch (result.status) {
    case 'ok': {
      const h = result.header;
      return [
        `lvstamp header v${result.version} (valid checksum)`,
        `  name:            ${JSON.stringify(h.name)}`,
        `  volume ID:       ${h.volumeId}`,
        `  owner ID:        ${h.ownerId}`,
        `  created:         ${describeTime(h.createdAtMs)} (${h.createdAtMs} ms)`,
        `  data offset:     ${h.dataOffsetBytes} bytes`,
        result.version === 1
          ? `  requested bytes: ${h.requestedBytes}`
          : `  capacity:        ${h.requestedBytes} bytes`,
      ].join('\n');
    }
    case 'not-stamped':
      return `not stamped by lvstamp: ${result.reason}; lvstamp never touches such a device`;
    case 'unsupported':
      return `lvstamp header of unsupported version ${result.version}: ${result.reason}; lvstamp never modifies or deletes it`;
    case 'corrupt':
      return `corrupt lvstamp header: ${result.reason}; lvstamp never deletes it automatically`;
  }
}

function describeTime(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? 'out of range' : date.toISOString();
}

function firstNonZero(bytes: Uint8Array): number {
  return bytes.findIndex((byte) => byte !== 0);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return UTF8.decode(bytes);
  } catch {
    return null;
  }
}

function readSafeUint64(b: Buffer, offset: number): number | null {
  const value = b.readBigUInt64LE(offset);
  return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : null;
}

function hex32(value: number): string {
  return value.toString(16).padStart(8, '0');
}

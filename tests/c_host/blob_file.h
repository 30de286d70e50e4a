/* The model data (fmu_mb.engine.data EngineData.to_bytes) of a file, for the C hosts that
 * call the engine directly: the bytes (malloc'ed) and their count, or NULL with a message on
 * stderr. */
#ifndef BLOB_FILE_H
#define BLOB_FILE_H
#include <stdio.h>
#include <stdlib.h>

static unsigned char *read_blob(const char *path, long *size)
{
    FILE *f = fopen(path, "rb");
    unsigned char *blob = NULL;
    if (f && fseek(f, 0, SEEK_END) == 0 && (*size = ftell(f)) >= 0 &&
        fseek(f, 0, SEEK_SET) == 0 && (blob = malloc((size_t)*size + 1)) != NULL &&
        fread(blob, 1, (size_t)*size, f) != (size_t)*size) {
        free(blob);
        blob = NULL;
    }
    if (f)
        fclose(f);
    if (!blob)
        fprintf(stderr, "cannot read %s\n", path);
    return blob;
}
#endif

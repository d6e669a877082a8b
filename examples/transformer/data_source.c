/* The data sources of data_source.h: plain text files (dataset.c). */
#include "data_source.h"

#include <stdio.h>

static void text_describe(const tf_dataset *d, char *out, size_t len) {
    snprintf(out, len, "from %lld texts of %lld files (%lld shorter texts dropped)", d->texts_read - d->texts_dropped,
             d->files, d->texts_dropped);
}

const tf_data_source tf_data_source_text = {"text files", tf_dataset_load, text_describe};
